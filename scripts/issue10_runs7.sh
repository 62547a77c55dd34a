#!/bin/bash
# Session 5: the CoLA joint baseline of queue 4 (3 epochs) was still rising, so when queue 4 has finished CoLA, stop
# it (before STS-B) and rerun the CoLA baseline for 9 epochs (2,169 steps, the TextHide runs' budget).
# Usage: nohup bash scripts/issue10_runs7.sh > runs/i10/queue7.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
export OMP_NUM_THREADS=2
until ls runs/i10/table1-joint/cola-*inter*joint.json >/dev/null 2>&1; do sleep 20; done
pkill -f issue10_runs6.sh; pkill -f issue10_runs4.sh; pkill -f "huang2020-table1 --scale cpu --mode joint"
echo "cola done, queue 4 stopped $(date -u +%T)"
$PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 9 --tasks cola \
    --variants baseline --out runs/i10/table1-joint-baseline9
echo "done $(date -u +%T)"
