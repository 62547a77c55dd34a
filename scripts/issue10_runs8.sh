#!/bin/bash
# Issue 10, session 6: the rest of TextHide Table 1 with the encoder fine-tuned jointly, in the same setting as
# scripts/issue10_runs4.sh (batch 32, baseline --epochs 3, every TextHide run >= 2,000 optimizer steps, encoder lr
# 3e-5, head lr 1e-3, epoch chosen on 10% of train held out; (m, k) = (256, 4), (16, 4) for RTE as in the paper),
# then the issue-11 seeds that did not finish (scripts/issue11_seeds.sh resumes). Each run resumes.
# Usage: nohup bash scripts/issue10_runs8.sh > runs/i10/queue8.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
echo "start $(date -u +%T)"
for task in stsb mrpc rte; do
  table1_joint $task
  echo "$task done $(date -u +%T)"
done
echo "table1 done $(date -u +%T)"
bash scripts/issue11_seeds.sh >> runs/i11/seeds.log 2>&1
echo "queue done $(date -u +%T)"
