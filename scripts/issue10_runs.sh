#!/bin/bash
# The issue-10 runs behind docs/results.md, in order, one process at a time, nice'd; each recipe resumes.
# Usage: nohup bash scripts/issue10_runs.sh > runs/i10/queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
# 1. Table 1, frozen encoder, 20,000-example cap, selection on 10% held-out train, public corpus 'mixed' (25,000)
$R huang2020-table1 --scale cpu --tasks sst2,cola,mrpc,stsb,rte --out runs/i10/table1-frozen --quiet
# 2. Figure 1 of Xie & Hong 2022, the paper's no-mask scheme, frozen, clean queries, 5,000 examples, 10 epochs,
#    5 of the paper's 8 epsilons (time)
$R xie2022-figure1 --scale cpu --train-limit 5000 --epochs 10 --tasks sst2,cola --dp-epsilons 0.1,1,4,8,20 \
    --out runs/i10/xie2022-figure1 --quiet
# 3. Table 6 at the quick scale (2,000 SST-2 examples, 2,500 public sentences per corpus)
$R huang2020-table6 --quick --public wiki,tweets,bbc,qnli-dev --out runs/i10/table6-quick --quiet
# 4. one small joint fine-tuning run: SST-2 Table 1 at the quick scale
$R huang2020-table1 --quick --mode joint --tasks sst2 --out runs/i10/table1-joint-quick --quiet
echo "queue done $(date -u +%T)"
