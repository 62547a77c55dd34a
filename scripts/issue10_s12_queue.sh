#!/bin/bash
# Session 12 queue for issue 10, one thread beside the issue-11 lane (scripts/issue11_s12_queue.sh); every stage
# resumes (a finished run is read back). Table 1's last cell, RTE inter (m, k) = (16, 4), into the folder of the other
# joint Table 1 runs; then DP instance encoding on CoLA at the Table 1 budget (scripts/issue10_s11_cola_dpie.sh's
# folder and protocol): the paper's Gaussian calibration at claimed epsilon 10 and 15, between the 8 that is the
# majority class and the 20 that learns, and the paper's Laplace calibration at claimed 20. The sound Laplace at 20
# is not run (docs/decisions.md, session 12): the sound Gaussian at 20 is already the majority class (docs/results.md
# 8.2a), and L1 clipping leaves each coordinate less signal at a noise scale of the same order.
# Then, as run in session 12, this lane went on with Table 5's MRPC seed 2:
#   WAIT_PID=<this queue> SEEDS=2 TABLE7=0 nohup bash scripts/issue11_s12_queue.sh > runs/i11/s12-queue-a2.log 2>&1 &
# Usage: nohup bash scripts/issue10_s12_queue.sh > runs/i10/s12-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
$R huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 3 --out runs/i10/table1-joint-s8 \
   --tasks rte --variants inter; stamp "table1 rte inter"
X() {
  $R xie2022-figure1 --scale cpu --mode joint --batch-size 32 --epochs 9 --tasks cola --dp-mechanisms "$1" \
     --dp-calibrations paper --dp-epsilons "$2" --out runs/i10/s11-xie2022-figure1-cola-joint
  stamp "cola dpie $1 paper epsilon $2"
}
X gaussian 10; X laplace 20; X gaussian 15
stamp "lane done"
