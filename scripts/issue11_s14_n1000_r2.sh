#!/bin/bash
# Session 14, issue 11 section 2: a second n = 1,000 release (sample seed 1, defender seed 2), attacked with three
# repair passes of 40 iterations and with the single 50-iteration pass of sessions 8-13, each on 2 threads with the
# issue-10 lanes stopped (kill -STOP, continued at the end); then the five n = 100 releases of
# scripts/issue11_s14_spread.sh with three passes of 40 (all pairs and the 200-neighbour graph), one thread.
# Usage: nohup bash scripts/issue11_s14_n1000_r2.sh > runs/i11/s14-n1000-r2.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
O=runs/i11/s14-spread
B=$SCALE_BENCH
LANES=$(pgrep -f "reproduce xie2022-figure1")
[ -n "$LANES" ] && kill -STOP $LANES
export OMP_NUM_THREADS=2
f=$O/scale_sst2_n1000_g200_s1_r3i40_t2.json
[ -f $f ] || $B --threads 2 --n 1000 --graph 200 --sample-seed 1 --seed 2 --nmf-repair-rounds 3 --nmf-repair-iters 40 --out $f > /dev/null
stamp "n 1000 sample 1, rounds 3 x 40"
f=$O/scale_sst2_n1000_g200_s1_t2.json
[ -f $f ] || $B --threads 2 --n 1000 --graph 200 --sample-seed 1 --seed 2 --out $f > /dev/null
stamp "n 1000 sample 1, one pass of 50"
[ -n "$LANES" ] && kill -CONT $LANES
export OMP_NUM_THREADS=1
for s in 0 1 2 3 4; do
  for g in 0 200; do
    f=$O/scale_sst2_n100_g${g}_s${s}_r3i40.json
    [ -f $f ] || nice -n 5 $B --threads 1 --n 100 --graph $g --sample-seed $s --seed $((s + 1)) --nmf-repair-rounds 3 \
        --nmf-repair-iters 40 --out $f > /dev/null
    stamp "n 100 graph $g sample $s, rounds 3 x 40"
  done
done
