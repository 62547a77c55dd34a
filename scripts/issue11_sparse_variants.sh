#!/bin/bash
# Issue 11 section 2, session 6: which settings of the k-NN-graph attack close the gap to the all-pairs attack
# (SST-2, (m, k) = (256, 4), 50 encodings per example; nmf started from clique groups grown on the graph).
# Neighbours per encoding (--graph), nmf iterations, groups per encoding (--nmf-support); n = 100 with all pairs
# as the reference. One JSON per point under runs/i11s6 (a finished point is skipped); one line each in the log.
# Usage: nohup bash scripts/issue11_sparse_variants.sh > runs/i11s6/variants.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
run() {
  local out=runs/i11s6/$1.json; shift
  [ -f $out ] || nice -n 10 $PY benchmarks/bench_reconstruction.py --task sst2 --train-limit 20000 --m 256 --k 4 \
      --threads 1 --out $out "$@" > /dev/null
  echo "$out $(python3 -c "import json;d=json.load(open('$out'));print({m: v['success'] for m, v in d['success'].items()}, d['attack_cpu_seconds'], d['peak_rss_gib'])")"
}
run dense_n100 --n 100 --graph 0 --nmf-iters 150 --methods clique,nmf
run v_n100_g100_i60 --n 100 --graph 100 --nmf-iters 60 --methods clique,nmf --nmf-support 32
run v_n100_g100_i150_s64 --n 100 --graph 100 --nmf-iters 150 --nmf-support 64 --methods clique,nmf
run v_n100_g200_i150_s32 --n 100 --graph 200 --nmf-iters 150 --methods clique,nmf --nmf-support 32
run v_n100_g200_i150_s64 --n 100 --graph 200 --nmf-iters 150 --nmf-support 64 --methods clique,nmf
run v_n100_g400_i150_s64 --n 100 --graph 400 --nmf-iters 150 --nmf-support 64 --methods clique,nmf
run v_n300_g100_i150 --n 300 --graph 100 --nmf-iters 150 --methods clique,nmf --nmf-support 32
run v_n300_g200_i60 --n 300 --graph 200 --nmf-iters 60 --methods clique,nmf --nmf-support 32
# session 5's seeding against session 6's, n = 300, 100 neighbours, 60 iterations
run scale_sst2_n300_clique --n 300 --graph 100 --nmf-iters 60 --methods paper-greedy,clique,nmf --nmf-seeds clique --nmf-support 32
run scale_sst2_n300_paper-greedy --n 300 --graph 100 --nmf-iters 60 --methods nmf --nmf-seeds paper-greedy --nmf-support 32
