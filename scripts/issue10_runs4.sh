#!/bin/bash
# Issue 10, session 5: TextHide Table 1 with the encoder fine-tuned jointly (the paper's setting), on the 2-core
# CPU machine. Batch 32 (the paper's Appendix B.3 grid is {16, 32}); the baseline gets --epochs 3, every TextHide
# run at least 2,000 optimizer steps (more epochs on smaller sets); encoder lr 3e-5, head lr 1e-3; epoch chosen on
# 10% of train held out; SST-2 capped at its first 20,000 examples. Cheapest tasks first; each run resumes.
# Usage: nohup bash scripts/issue10_runs4.sh > runs/i10/queue4.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
echo "start $(date -u +%T)"
for task in sst2 cola stsb mrpc rte; do
  table1_joint $task
  echo "$task done $(date -u +%T)"
done
echo "queue done $(date -u +%T)"
