# Environment for the issue-10 runs (source it from the repository root).
export PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PRIVNLU_DATA=${PRIVNLU_DATA:-../shared/data/glue}
PY=${PY:-.venv/bin/python}
