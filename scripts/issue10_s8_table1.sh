#!/bin/bash
# Session 8: TextHide Table 1 with the encoder fine-tuned jointly, every run from the pretrained encoder (the
# session-7 fix) and every run, baseline included, with at least 2,000 optimizer steps (min_baseline_steps).
# One task at a time, SST-2 first; a rerun of this script skips finished runs and resumes an unfinished one from its
# last epoch. Results: runs/i10/table1-joint-s8/*.json (copied into results/ once a task is done).
# Usage: nohup bash scripts/issue10_s8_table1.sh > runs/i10/table1-joint-s8.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
export OMP_NUM_THREADS=${THREADS:-2}  # THREADS=1 when the issue-11 queue shares the cores
out=runs/i10/table1-joint-s8
mkdir -p $out
for task in ${TASKS:-sst2 cola stsb mrpc rte}; do
  nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
      --tasks $task --out $out
  echo "$task done $(date -u +%T)"
done
echo "queue done $(date -u +%T)"
