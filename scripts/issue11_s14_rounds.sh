#!/bin/bash
# Session 14, issue 11 section 2: repeated repair passes (--nmf-repair-rounds) on session 8's n = 300 release
# (sample seed 0, defender seed 1), one thread: 3 rounds of 50 iterations (run first, by hand, as
# scale_sst2_n300_g200_s0_r3.json), 2 rounds of 50, 3 rounds of 40 (the n = 1,000 time budget allows about 100 more
# nmf iterations than one round).
# Usage: nohup bash scripts/issue11_s14_rounds.sh > runs/i11/s14-rounds.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
O=runs/i11/s14-spread
B="nice -n 5 $SCALE_BENCH --threads 1 --n 300 --graph 200 --sample-seed 0 --seed 1"
[ -f $O/scale_sst2_n300_g200_s0_r3.json ] || $B --nmf-repair-rounds 3 --out $O/scale_sst2_n300_g200_s0_r3.json > /dev/null
[ -f $O/scale_sst2_n300_g200_s0_r2.json ] || $B --nmf-repair-rounds 2 --out $O/scale_sst2_n300_g200_s0_r2.json > /dev/null
stamp "n 300 rounds 2"
[ -f $O/scale_sst2_n300_g200_s0_r3i40.json ] || $B --nmf-repair-rounds 3 --nmf-repair-iters 40 --out $O/scale_sst2_n300_g200_s0_r3i40.json > /dev/null
stamp "n 300 rounds 3 x 40"
