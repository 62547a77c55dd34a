#!/bin/bash
# Session 14, issue 10 section 4: the rest of the paper's Figure 1 grid on CoLA with the encoder fine-tuned through
# the noise, at the Table 1 budget (scripts/issue10_s11_cola_dpie.sh's folder and protocol: all 8,551 examples,
# 9 epochs = 2,169 steps of batch 32). The 24 points not yet run, 12 per lane of one thread, each lane ordered so
# that the points whose outcome the docs predicted but had not measured come first:
#   the paper's Laplace at claimed 8, 10, 15 (standard deviation 0.35, 0.28, 0.19 per coordinate: predicted to learn,
#   the Gaussian's cliff sits between sigma 0.72 and 0.58), then the paper's calibrations at claimed 2 and below and
#   the sound calibrations below 20 (predicted to stay at the majority class).
# A finished run is read back, so a rerun resumes; an interrupted run resumes from its last epoch.
# Usage: LANE=a nohup bash scripts/issue10_s14_cola_grid.sh > runs/i10/s14-cola-grid-a.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
export OMP_NUM_THREADS=1
O=runs/i10/s11-xie2022-figure1-cola-joint
X() {  # X MECHANISM CALIBRATION EPSILON
  nice -n 10 $PY -m privnlu.cli.main reproduce xie2022-figure1 --scale cpu --mode joint --batch-size 32 --epochs 9 \
      --tasks cola --dp-mechanisms "$1" --dp-calibrations "$2" --dp-epsilons "$3" --out $O
  stamp "cola dpie $1 $2 epsilon $3"
}
wait_pid
case "${LANE:?LANE=a or LANE=b}" in
  a) X laplace paper 8; X laplace paper 15; X gaussian paper 2; X laplace paper 2; X gaussian correct 15
     X gaussian paper 1; X laplace correct 15; X laplace paper 1; X gaussian correct 8; X laplace correct 8
     X gaussian correct 2; X laplace correct 2 ;;
  b) X laplace paper 10; X laplace correct 20; X gaussian correct 10; X gaussian paper 0.1; X laplace correct 10
     X laplace paper 0.1; X gaussian correct 4; X laplace correct 4; X gaussian correct 1; X laplace correct 1
     X gaussian correct 0.1; X laplace correct 0.1 ;;
esac
