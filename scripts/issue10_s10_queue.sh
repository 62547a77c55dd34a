#!/bin/bash
# Session 10 queue for issue 10, one thread beside the issue-11 jobs; every stage resumes (finished runs are read
# back, an unfinished joint run resumes from its last epoch). Replaces scripts/issue10_s9_queue.sh, whose stages 1-2
# and the first two Figure 2 points are done; this one interleaves the rest of the fine-tuned Figure 2 panel (16 min
# a run) with DP instance encoding fine-tuned through the noise on CoLA and under the paper's calibration (3-4 min
# a run), then Table 6 and Table 1 on MRPC and RTE (40+ min a run).
# Usage: THREADS=1 nohup bash scripts/issue10_s10_queue.sh > runs/i10/s10-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
export OMP_NUM_THREADS=${THREADS:-2}
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
J="--scale cpu --mode joint --batch-size 32 --epochs 3"
S="runs/i10/s8-sst2-5k-joint"
F2="huang2020-figure2 $J --train-limit 5000 --out $S"
X="xie2022-figure1 $J --train-limit 5000 --out runs/i10/s9-xie2022-figure1-joint"
# 1. Figure 2, fine-tuned: the mask pool at k = 4 (m = 0 and 256 done in session 9)
$R $F2 --ms inf --ks 4; stamp "figure2 m = inf"
# 2. DP-IE fine-tuned on CoLA (5,000 examples, 3 epochs; baseline and TextHide (16, 4) come with the recipe)
$R $X --tasks cola --dp-calibrations correct,paper --dp-mechanisms gaussian --dp-epsilons 1,8,20; stamp "dpie cola gaussian"
$R $F2 --ms 16,1024 --ks 4; stamp "figure2 m = 16, 1024"
# 3. DP-IE fine-tuned on SST-2 under the paper's calibration (not a valid guarantee; about 1.7x less noise), and
#    the sound one between epsilon 8 and 20
$R $X --tasks sst2 --dp-calibrations paper --dp-mechanisms gaussian --dp-epsilons 1,4,8,20; stamp "dpie sst2 paper gaussian"
$R $X --tasks sst2 --dp-calibrations correct --dp-mechanisms gaussian --dp-epsilons 10,15; stamp "dpie sst2 correct 10, 15"
$R $X --tasks sst2,cola --dp-calibrations paper,correct --dp-mechanisms laplace --dp-epsilons 20; stamp "dpie laplace 20"
# 4. Figure 2, fine-tuned: the k axis at m = 256
$R $F2 --ms 256 --ks 1,2,8; stamp "figure2 k = 1, 2, 8"
$R $F2 --ms 0 --ks 1; stamp "figure2 (0, 1): the paper's baseline point at this budget"
# 5. Table 6 and Table 1 on MRPC and RTE
$R huang2020-table6 $J --train-limit 5000 --out $S; stamp "table6 joint"
TASKS="mrpc rte" bash scripts/issue10_s8_table1.sh; stamp "table1 mrpc rte"
stamp "queue done"
