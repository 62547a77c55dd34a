# Environment for the issue-10 runs on the shared development machine (source it).
export PYTHONPATH=/work/wt/i10paper/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PRIVNLU_DATA=/work/shared/data/glue
PY=/work/main/.venv/bin/python
