#!/bin/bash
# Issue 11, session 5: the reconstruction attack (Xie & Hong 2021 Table 1 setting: 100 private sentences x 50
# encodings, m = 1) at k = 4 and k = 6, seeds 0, 1, 2, every method, CoLA then SST-2; one JSON per point, resumable.
# Run at the lowest priority beside the issue-10 queue, on one thread.
# Usage: nohup bash scripts/issue11_seeds.sh > runs/i11/seeds.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
for task in cola sst2; do
  nice -n 19 $PY benchmarks/xie2021_sweep.py --task $task --conditions 1:4,1:6 --seeds 0,1,2 --out-dir runs/i11
done
echo "done $(date -u +%T)"
