#!/bin/bash
# Session 13 queue for issue 10, one thread beside the issue-11 lane (scripts/issue11_s13_queue.sh); every stage
# resumes (a finished run is read back, an interrupted joint run continues from its last epoch).
# 1. The fine-tuned DP-IE Figure 1 grid on SST-2 completed (docs/results.md 8.2a): every (mechanism, calibration,
#    epsilon) of the paper's grid at session 9's budget (5,000 examples, 3 epochs), into session 9's folder, where the
#    points already run are read back. Ordered so that the rows with a cliff to locate come first.
# 2. Table 6 with the encoder fine-tuned: TextHide-inter (256, 4) per public corpus on Figure 2's fine-tuned panel
#    (its baseline and (256, 4) intra are read back from the same folder), one corpus at a time.
# Usage: nohup bash scripts/issue10_s13_queue.sh > runs/i10/s13-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
J="--scale cpu --mode joint --batch-size 32 --epochs 3 --train-limit 5000"
F1() {
  $R xie2022-figure1 $J --tasks sst2 --dp-mechanisms "$1" --dp-calibrations "$2" --dp-epsilons "$3" \
     --out runs/i10/s9-xie2022-figure1-joint
  stamp "sst2 dpie $1 $2 epsilon $3"
}
F1 gaussian paper 10,15,2,0.1
F1 laplace paper 8,4,10,15,2,1,0.1
F1 gaussian correct 2,0.1
F1 laplace correct 15,10,4,2,1,0.1
for c in mixed wiki tweets bbc qnli-dev; do
  $R huang2020-table6 $J --public $c --out runs/i10/s8-sst2-5k-joint; stamp "table6 joint $c"
done
stamp "lane done"
