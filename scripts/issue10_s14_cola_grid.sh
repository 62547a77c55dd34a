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
wait_pid
case "${LANE:?LANE=a or LANE=b}" in
  a) cola_dpie laplace paper 8; cola_dpie laplace paper 15; cola_dpie gaussian paper 2
     cola_dpie laplace paper 2; cola_dpie gaussian correct 15; cola_dpie gaussian paper 1
     cola_dpie laplace correct 15; cola_dpie laplace paper 1; cola_dpie gaussian correct 8
     cola_dpie laplace correct 8; cola_dpie gaussian correct 2; cola_dpie laplace correct 2 ;;
  b) cola_dpie laplace paper 10; cola_dpie laplace correct 20; cola_dpie gaussian correct 10
     cola_dpie gaussian paper 0.1; cola_dpie laplace correct 10; cola_dpie laplace paper 0.1
     cola_dpie gaussian correct 4; cola_dpie laplace correct 4; cola_dpie gaussian correct 1
     cola_dpie laplace correct 1; cola_dpie gaussian correct 0.1; cola_dpie laplace correct 0.1 ;;
esac
