# Environment for the issue-10 runs (source it from the repository root).
export PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PRIVNLU_DATA=${PRIVNLU_DATA:-../shared/data/glue}
PY=${PY:-.venv/bin/python}
# One task of TextHide Table 1 with the encoder fine-tuned jointly, in the session-5 setting (scripts/issue10_runs4.sh).
table1_joint() {
  OMP_NUM_THREADS=2 nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 \
    --epochs 3 --tasks "$1" --out runs/i10/table1-joint
}
# A timestamped line in a queue's log: stamp "what finished".
stamp() { echo "== $1 $(date -u +%T)"; }
# Block until the process WAIT_PID (if set) has ended: a lane that goes on where another finishes.
wait_pid() { while [ -n "${WAIT_PID:-}" ] && kill -0 "$WAIT_PID" 2> /dev/null; do sleep "${1:-15}"; done; }
