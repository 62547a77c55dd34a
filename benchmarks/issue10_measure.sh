#!/usr/bin/env bash
# Issue 10 measurements, one after the other (docs/results.md, "Fine-tuning speed and bf16 (issue 10)").
# Run from the repository root:  nohup nice -n 10 bash benchmarks/issue10_measure.sh > runs/logs/issue10.log 2>&1 &
# Results: runs/bench/*.json (benchmarks) and runs/issue10/*/result.json (training runs).
set -euo pipefail
export PRIVNLU_DATA=${PRIVNLU_DATA:-../shared/data/glue} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} HF_HUB_OFFLINE=1
PY=${PY:-python}
step() { echo "== $(date -u +%H:%M:%S) $*"; }

step "fine-tuning throughput: bucketed vs max-length padding, fp32 and bf16"
$PY benchmarks/bench_finetune.py --task sst2 --batch-size 32 --max-length 64 --steps 12 --rounds 2

step "TextHide encoding vs the copy bound"
$PY benchmarks/bench_texthide.py --rounds 30

step "frozen pooling, cls vs mean (fp32): runs/bench/pooling_frozen.json"
$PY benchmarks/pooling_frozen.py --tasks sst2:10000,mrpc
$PY benchmarks/pooling_frozen.py --tasks stsb --name pooling_frozen_stsb

step "bf16 accuracy cost, frozen features (mean pooling): runs/bench/pooling_frozen_bf16.json"
$PY benchmarks/pooling_frozen.py --tasks sst2:10000,mrpc --poolings mean --bf16 on

step "bf16 accuracy cost, joint fine-tuning (SST-2, 2,000 train examples, 1 epoch)"
for seed in 0 1; do
  for bf16 in off on; do
    $PY -m privnlu.cli.main train --task sst2 --mode joint --train-limit 2000 --epochs 1 --batch-size 32 \
      --max-length 64 --bf16 $bf16 --seed $seed --quiet --out runs/issue10/joint-bf16-$bf16-seed$seed
  done
done
step "done"

step "bf16 vs fp32 features (reads the caches written above)"
$PY benchmarks/bf16_feature_drift.py --tasks sst2:10000,mrpc --pooling mean
