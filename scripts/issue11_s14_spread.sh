#!/bin/bash
# Session 14, issue 11 section 2: how much one release's success varies, the yardstick of the parity target
# ("success at n = 1,000 no lower than at n = 100 with today's attack"). Five releases at n = 100 (private sample
# and defender secrets both drawn afresh: --sample-seed S --seed S+1), each attacked with all pairs and on the
# 200-neighbour graph; then n = 300 on the graph, sample seed 0 (session 8's release) again, now with `claimed`
# (how many originals some group stands for), to split the losses between clustering and solve.
# Usage: nohup bash scripts/issue11_s14_spread.sh > runs/i11/s14-spread.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
O=runs/i11/s14-spread
mkdir -p $O
B="nice -n 5 $SCALE_BENCH --threads 1"
wait_pid
for s in 0 1 2 3 4; do
  for g in 0 200; do
    f=$O/scale_sst2_n100_g${g}_s$s.json
    [ -f $f ] || $B --n 100 --graph $g --sample-seed $s --seed $((s + 1)) --out $f > /dev/null
    stamp "n 100 graph $g sample $s"
  done
done
f=$O/scale_sst2_n300_g200_s0.json
[ -f $f ] || $B --n 300 --graph 200 --sample-seed 0 --seed 1 --out $f > /dev/null
stamp "n 300 graph 200 sample 0"
