#!/bin/bash
# Session 6 queue (replaces scripts/issue10_runs9.sh once the STS-B intra run of scripts/issue10_runs8.sh is
# done): the full SST-2 audit (issue 13) first, then the rest of Table 1 joint (STS-B inter, MRPC, RTE; each run
# resumes from its checkpoint) and the issue-11 seeds.
# Usage: nohup bash scripts/issue10_runs10.sh > runs/i10/queue10.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
bash scripts/issue13_sst2_audit.sh > runs/i13/audit-sst2.log 2>&1
. scripts/env.sh
export OMP_NUM_THREADS=2
for task in stsb mrpc rte; do
  nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
      --tasks $task --out runs/i10/table1-joint
  echo "$task done $(date -u +%T)"
done
bash scripts/issue11_seeds.sh >> runs/i11/seeds.log 2>&1
echo "queue done $(date -u +%T)"
