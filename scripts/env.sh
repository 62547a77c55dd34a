# Environment for the issue-10 runs (source it from the repository root).
export PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PRIVNLU_DATA=${PRIVNLU_DATA:-../shared/data/glue}
PY=${PY:-.venv/bin/python}
# One task of TextHide Table 1 with the encoder fine-tuned jointly, in the session-5 setting (scripts/issue10_runs4.sh).
table1_joint() {
  OMP_NUM_THREADS=2 nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 \
    --epochs 3 --tasks "$1" --out runs/i10/table1-joint
}
# DP instance encoding fine-tuned on CoLA at the Table 1 budget (all 8,551 examples, 9 epochs), the paper's Figure 1
# point MECHANISM CALIBRATION EPSILON into the folder of docs/results.md 8.2a (sessions 11-14).
COLA_DPIE=runs/i10/s11-xie2022-figure1-cola-joint
cola_dpie() {
  nice -n 10 $PY -m privnlu.cli.main reproduce xie2022-figure1 --scale cpu --mode joint --batch-size 32 --epochs 9 \
      --tasks cola --dp-mechanisms "$1" --dp-calibrations "$2" --dp-epsilons "$3" --out $COLA_DPIE
  stamp "cola dpie $1 $2 epsilon $3"
}
# The reconstruction attack at scale (docs/results_attacks.md, sessions 8-14): SST-2, (256, 4), 64 support groups;
# add --n, --graph, --threads, the release's seeds and --out.
SCALE_BENCH="$PY benchmarks/bench_reconstruction.py --task sst2 --train-limit 20000 --m 256 --k 4 --nmf-support 64 --methods nmf"
# A timestamped line in a queue's log: stamp "what finished".
stamp() { echo "== $1 $(date -u +%T)"; }
# Block until the process WAIT_PID (if set) has ended: a lane that goes on where another finishes.
wait_pid() { while [ -n "${WAIT_PID:-}" ] && kill -0 "$WAIT_PID" 2> /dev/null; do sleep "${1:-15}"; done; }
