#!/bin/bash
# Issue 10, session 5: what a sound DP guarantee costs when the encoder is fine-tuned through the noise.
# xie2022-figure1 in joint mode on SST-2: the baseline, TextHide (16, 4) and the paper's DP-IE scheme (no mask)
# with the sound ("correct") Gaussian calibration at epsilon 20 and 8 (per example, the whole release), 5,000
# training examples, 3 epochs, batch 32, encoder lr 3e-5, head lr 1e-3; clean dev queries. Resumable.
# Usage: nohup bash scripts/issue10_runs5.sh > runs/i10/queue5.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
export OMP_NUM_THREADS=2
$PY -m privnlu.cli.main reproduce xie2022-figure1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
    --train-limit 5000 --tasks sst2 --dp-epsilons 20,8 --dp-mechanisms gaussian --dp-calibrations correct \
    --out runs/i10/xie2022-figure1-joint
echo "done $(date -u +%T)"
