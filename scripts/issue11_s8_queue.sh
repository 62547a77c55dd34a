#!/bin/bash
# Session 8 queue for issue 11, at the lowest priority on one thread beside the issue-10 queue; every stage
# resumes (a finished point is read back). Usage: nohup bash scripts/issue11_s8_queue.sh > runs/i11/s8-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh   # runs finished in an earlier session (results/) are skipped
export OMP_NUM_THREADS=1
N="nice -n 19"
stamp() { echo "== $1 $(date -u +%T)"; }
# 1. Xie & Hong 2021 Table 1 (k sweep) and Figure 1 (m sweep) with every method and metric, CoLA and SST-2
$N $PY -m privnlu.cli.main reproduce xie2021-table1 --seed 0 --out runs/i11/s8-xie2021 --quiet; stamp "xie2021 table1"
$N $PY -m privnlu.cli.main reproduce xie2021-figure1 --seed 0 --out runs/i11/s8-xie2021 --quiet; stamp "xie2021 figure1"
# 2. SST-2 at k = 4 and 6, seeds 0-2 (session 5 ran CoLA's three seeds and three of SST-2's six points)
$N $PY benchmarks/xie2021_sweep.py --task sst2 --conditions 1:4,1:6 --seeds 0,1,2 --out-dir runs/i11/s8-seeds; stamp "sst2 seeds"
# 3. Qu et al. Tables 4-5: equal budgets (3 epochs, batch 32, both encoders), the paper's learning rates, 3 seeds,
#    10,000 SST-2 sentences; MRPC (all 3,668) stands in for QQP; the paper's etas 50, 100 and 150 of its six
FT="dchi finetune --encoders transformer,bilstm --modes null,token,text --etas 50,100,150 --max-length 128 --batch-size 32 --epochs 3 --quiet"
for s in 0 1 2; do
  $N $PY -m privnlu.cli.main $FT --task sst2 --train-limit 10000 --seed $s --out runs/dchi_t45/sst2_s$s; stamp "t4 sst2 seed $s"
done
for s in 0 1 2; do
  $N $PY -m privnlu.cli.main $FT --task mrpc --seed $s --out runs/dchi_t45/mrpc_s$s; stamp "t5 mrpc seed $s"
done
stamp "queue done"
