#!/bin/bash
# Session 8 queue for issue 10, in priority order; every stage resumes (finished runs are read back, an unfinished
# joint run resumes from its last epoch), so rerunning this script after an interruption loses at most one epoch.
# Usage: nohup bash scripts/issue10_s8_queue.sh > runs/i10/s8-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh   # runs finished in an earlier session (results/) are skipped
export OMP_NUM_THREADS=${THREADS:-2}  # THREADS=1 when the issue-11 queue shares the cores
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
J="--scale cpu --mode joint --batch-size 32 --epochs 3"
while pgrep -f "reproduce .*--out runs/i10" > /dev/null; do sleep 30; done   # an earlier copy of this queue still running
# 1. Table 1 joint, SST-2 (scripts/issue10_s8_table1.sh runs the same command per task)
TASKS=sst2 bash scripts/issue10_s8_table1.sh; stamp "table1 sst2"
# 2. DP instance encoding, Figure 1, frozen encoder: the paper's whole grid on SST-2 (20,000) and CoLA (all 8,551)
$R xie2022-figure1 --scale cpu --tasks sst2,cola --out runs/i10/s8-xie2022-figure1-frozen; stamp "xie2022 figure1 frozen"
# 3. Figure 2: the reconstruction attack against epsilon, SST-2 and CoLA, the paper's unmasked scheme
$R xie2022-figure2 --tasks sst2,cola --seed 0 --out runs/i10/s8-xie2022-figure2; stamp "xie2022 figure2"
# 4. Table 1 joint, CoLA
TASKS=cola bash scripts/issue10_s8_table1.sh; stamp "table1 cola"
# 4b. Table 1 with a frozen encoder, mean pooling (the packaged MiniLM's default since session 4; section 1a's
#     session-4 table used [CLS], whose baselines sat at the majority class on MRPC and RTE)
$R huang2020-table1 --scale cpu --lrs 0.001 --tasks sst2,cola,mrpc,stsb,rte --out runs/i10/s8-table1-frozen; stamp "table1 frozen"
# 5. Figure 1 with the encoder fine-tuned through the noise (5,000 examples, 3 epochs per point), sound calibration
X="runs/i10/s8-xie2022-figure1-joint"
$R xie2022-figure1 $J --train-limit 5000 --tasks sst2,cola --dp-calibrations correct --out $X; stamp "xie2022 joint correct"
# 6. Figure 2 fine-tuned panel and Table 6, on the first 5,000 SST-2 examples (>= 2,000 steps per run), one folder
#    so that they share the baseline and (256, 4)-intra runs; every public corpus then exceeds the private set
S="runs/i10/s8-sst2-5k-joint"
$R huang2020-figure2 $J --train-limit 5000 --ms 0,16,256,1024,inf --ks 4 --out $S
$R huang2020-figure2 $J --train-limit 5000 --ms 256 --ks 1,2,8 --out $S; stamp "figure2 joint"
$R huang2020-table6 $J --train-limit 5000 --out $S; stamp "table6 joint"
# 7. Table 1 joint, the pair tasks
TASKS="stsb mrpc rte" bash scripts/issue10_s8_table1.sh; stamp "table1 pairs"
# 8. Figure 1 fine-tuned, the paper's calibration (not a DP guarantee)
$R xie2022-figure1 $J --train-limit 5000 --tasks sst2,cola --dp-calibrations paper --out $X; stamp "xie2022 joint paper"
$R huang2020-figure2 $J --train-limit 5000 --ms 1,64 --ks 4 --out $S; stamp "figure2 joint, the rest of k = 4"
stamp "queue done"
