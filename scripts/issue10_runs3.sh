#!/bin/bash
# Rest of the issue-10 queue after runs2's steps 1-2 (table 6 at the quick scale; one small joint run, baseline and
# intra only, 1,000 SST-2 examples, 3 epochs: what fit before the deadline). Waits for PID $1 (the running step).
# Usage: nohup bash scripts/issue10_runs3.sh PID > runs/i10/queue3.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
while kill -0 "$1" 2>/dev/null; do sleep 10; done
echo "figure1 done $(date -u +%T)"
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
$R huang2020-table6 --quick --public wiki,tweets,bbc,qnli-dev --out runs/i10/table6-quick --quiet
echo "table6 done $(date -u +%T)"
$R huang2020-table1 --quick --mode joint --tasks sst2 --variants baseline,intra --train-limit 1000 \
    --out runs/i10/table1-joint-quick --quiet
echo "queue done $(date -u +%T)"
