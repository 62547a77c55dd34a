#!/bin/bash
# Session 14, issue 11 section 2: n = 1,000 (session 8's release: sample seed 0, defender seed 1) with three repair
# passes of 40 nmf iterations, on 2 threads; the issue-10 lanes are stopped (kill -STOP) for the run so that the
# attack has the 2 cores, then continued (kill -CONT).
# Usage: nohup bash scripts/issue11_s14_n1000.sh > runs/i11/s14-n1000.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
export OMP_NUM_THREADS=2
$SCALE_BENCH --threads 2 --n 1000 --graph 200 --sample-seed 0 --seed 1 --nmf-repair-rounds 3 --nmf-repair-iters 40 \
    --out runs/i11/s14-spread/scale_sst2_n1000_g200_s0_r3i40_t2.json > /dev/null
stamp "n 1000 rounds 3 x 40, 2 threads"
