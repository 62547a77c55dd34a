#!/bin/bash
# Session 9 queue for issue 10 (what fits in one session on one thread beside the issue-11 queue), in priority order;
# every stage resumes (finished runs are read back, an unfinished joint run resumes from its last epoch).
# Usage: THREADS=1 nohup bash scripts/issue10_s9_queue.sh > runs/i10/s9-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh   # runs finished in an earlier session (results/) are skipped
export OMP_NUM_THREADS=${THREADS:-2}
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
J="--scale cpu --mode joint --batch-size 32 --epochs 3"
while pgrep -f "reproduce .*--out runs/i10" > /dev/null; do sleep 30; done   # an earlier queue still running
# 1. DP instance encoding with the encoder fine-tuned through the noise, sound calibration, SST-2 (5,000 examples,
#    3 epochs per point; every run from the pretrained encoder). Replaces section 8.2a's session-5 runs, which
#    started from an encoder already fine-tuned by the recipe's earlier runs (the bug fixed in session 7).
X="runs/i10/s9-xie2022-figure1-joint"
$R xie2022-figure1 $J --train-limit 5000 --tasks sst2 --dp-calibrations correct --dp-mechanisms gaussian \
    --dp-epsilons 1,4,8,20 --out $X; stamp "xie2022 joint gaussian"
$R xie2022-figure1 $J --train-limit 5000 --tasks sst2 --dp-calibrations correct --dp-mechanisms laplace \
    --dp-epsilons 8,20 --out $X; stamp "xie2022 joint laplace"
# 2. Table 1 joint, STS-B (the smallest-per-step pair task; >= 2,000 steps for every run)
TASKS=stsb bash scripts/issue10_s8_table1.sh; stamp "table1 stsb"
# 3. Figure 2 with the encoder fine-tuned, the mask-pool axis at k = 4 on the first 5,000 SST-2 examples (>= 2,000
#    steps per run): mixing alone (m = 0), the paper's m = 256, and a fresh mask per encoding (m = inf)
S="runs/i10/s8-sst2-5k-joint"
$R huang2020-figure2 $J --train-limit 5000 --ms 0,256,inf --ks 4 --out $S; stamp "figure2 joint m = 0, 256, inf"
# 4. the rest of the fine-tuned Figure 2 panel (session 10 moved it before MRPC / RTE: 16 min per run, against 40+
#    for a Table 1 pair-task run), then Table 6 and session 8's MRPC and RTE
$R huang2020-figure2 $J --train-limit 5000 --ms 16,1024 --ks 4 --out $S
$R huang2020-figure2 $J --train-limit 5000 --ms 256 --ks 1,2,8 --out $S; stamp "figure2 joint"
$R huang2020-table6 $J --train-limit 5000 --out $S; stamp "table6 joint"
TASKS="mrpc rte" bash scripts/issue10_s8_table1.sh; stamp "table1 mrpc rte"
stamp "queue done"
