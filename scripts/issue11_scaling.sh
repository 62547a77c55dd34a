#!/bin/bash
# Issue 11 section 2, session 6: the reconstruction attack on a k-NN graph against the number of private SST-2
# examples (50 encodings each, (m, k) = (256, 4)); nmf started from clique groups grown on the graph, 200
# neighbours per encoding, 64 groups per encoding, 150 iterations (the settings chosen at n = 100 in
# runs/i11s6/v_*.json, commands in docs/results_attacks.md); n = 100 also with all pairs (the reference). One JSON
# per point; a finished point is skipped.
# Usage: nohup bash scripts/issue11_scaling.sh [N ...] > runs/i11s6/scaling.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
B="nice -n 10 $PY benchmarks/bench_reconstruction.py --task sst2 --train-limit 20000 --m 256 --k 4 --threads 1"
for n in ${@:-1000 300 100}; do
  out=runs/i11s6/scale_sst2_n${n}_g200.json
  [ -f $out ] || $B --n $n --graph 200 --nmf-iters 150 --nmf-support 64 --methods paper-greedy,clique,nmf --out $out > /dev/null
  echo "n=$n graph 200: $(python3 -c "import json;d=json.load(open('$out'));print({m: v['success'] for m, v in d['success'].items()}, d['attack_cpu_seconds'], d['peak_rss_gib'])") $(date -u +%T)"
done
out=runs/i11s6/scale_sst2_n100_dense.json
[ -f $out ] || $B --n 100 --graph 0 --nmf-iters 150 --methods paper-greedy,clique,nmf --out $out > /dev/null
echo "n=100 all pairs: $(python3 -c "import json;d=json.load(open('$out'));print({m: v['success'] for m, v in d['success'].items()}, d['attack_cpu_seconds'], d['peak_rss_gib'])") $(date -u +%T)"
