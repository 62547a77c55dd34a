#!/bin/bash
# The issue-10 runs behind docs/results.md (second queue: budgets cut to what the shared 2-core machine allowed
# before the deadline), one process at a time, nice'd; each recipe resumes.
# Usage: nohup bash scripts/issue10_runs2.sh > runs/i10/queue2.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
echo "start $(date -u +%T)"
# 1. Table 1, frozen encoder, 20,000-example cap, 10 epochs (TextHide >= 2,000 steps), head lr 1e-3, epoch chosen
#    on 10% held-out train, public corpus 'mixed' (25,000 sentences); cheap tasks first
$R huang2020-table1 --scale cpu --epochs 10 --lrs 0.001 --tasks rte,mrpc,stsb,cola,sst2 --out runs/i10/table1-frozen --quiet
echo "table1 done $(date -u +%T)"
# 2. Figure 1 of Xie & Hong 2022, the paper's no-mask scheme, frozen, clean queries, 5,000 examples, 5 epochs,
#    5 of the paper's 8 epsilons
$R xie2022-figure1 --scale cpu --train-limit 5000 --epochs 5 --tasks sst2,cola --dp-epsilons 0.1,1,4,8,20 \
    --out runs/i10/xie2022-figure1 --quiet
echo "figure1 done $(date -u +%T)"
# 3. Table 6 at the quick scale (2,000 SST-2 examples, 2,500 public sentences per corpus)
$R huang2020-table6 --quick --public wiki,tweets,bbc,qnli-dev --out runs/i10/table6-quick --quiet
echo "table6 done $(date -u +%T)"
# 4. one small joint fine-tuning run: SST-2 Table 1 at the quick scale
$R huang2020-table1 --quick --mode joint --tasks sst2 --out runs/i10/table1-joint-quick --quiet
echo "queue done $(date -u +%T)"
