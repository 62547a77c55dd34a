#!/bin/bash
# Session 6 queue: after the STS-B rows of scripts/issue10_runs8.sh finish, the full SST-2 audit (issue 13), then
# the rest of Table 1 joint (MRPC, RTE) and the issue-11 seeds. Every step resumes.
# Usage: nohup bash scripts/issue10_runs9.sh > runs/i10/queue9.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
until grep -q "stsb done" runs/i10/queue8.log; do sleep 20; done
pkill -f issue10_runs8.sh; sleep 2; pkill -TERM -f "huang2020-table1 .* --tasks mrpc"; sleep 15
bash scripts/issue13_sst2_audit.sh
. scripts/env.sh
export OMP_NUM_THREADS=2
for task in mrpc rte; do
  nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
      --tasks $task --out runs/i10/table1-joint
  echo "$task done $(date -u +%T)"
done
bash scripts/issue11_seeds.sh >> runs/i11/seeds.log 2>&1
echo "queue done $(date -u +%T)"
