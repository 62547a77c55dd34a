#!/bin/bash
# Session 11 queue for issue 10: lanes of one thread each (LANE=a, b or rest), every stage resumes (a finished run is
# read back; an unfinished joint run resumes from its last epoch while runs/ holds its hidden checkpoint). Table 1's
# variants run apart (--variants) so that two lanes share the cores; they write into the same folder as sessions
# 8-10's SST-2, CoLA and STS-B runs. As run in session 11: lane a finished the fine-tuned Figure 2 cross (k = 8 at
# m = 256, then the paper's (0, 1) baseline point), then Table 1's MRPC intra and RTE baseline; lane b ran MRPC
# baseline and inter, then RTE intra; each lane then went on with scripts/issue10_s11_cola_dpie.sh. Lane `rest` is
# what session 11 left: RTE inter (about 55 minutes; its baseline sat at the majority class, docs/results.md 1),
# then Table 6 with the encoder fine-tuned (5 inter runs on the Figure 2 panel's 5,000 examples, 25-40 min each).
# Usage: LANE=a nohup bash scripts/issue10_s11_queue.sh > runs/i10/s11-queue-a.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
export OMP_NUM_THREADS=1
R="nice -n 10 $PY -m privnlu.cli.main reproduce"
J="--scale cpu --mode joint --batch-size 32 --epochs 3"
F2="huang2020-figure2 $J --train-limit 5000 --out runs/i10/s8-sst2-5k-joint"
T1="huang2020-table1 $J --out runs/i10/table1-joint-s8"
case "${LANE:?LANE=a, b or rest}" in
  a) $R $F2 --ms 256 --ks 8; stamp "figure2 (256, 8)"
     $R $F2 --ms 0 --ks 1; stamp "figure2 (0, 1): the paper's baseline point at this budget"
     $R $T1 --tasks mrpc --variants intra; stamp "table1 mrpc intra"
     $R $T1 --tasks rte --variants baseline; stamp "table1 rte baseline" ;;
  b) $R $T1 --tasks mrpc --variants baseline; stamp "table1 mrpc baseline"
     $R $T1 --tasks mrpc --variants inter; stamp "table1 mrpc inter"
     $R $T1 --tasks rte --variants intra; stamp "table1 rte intra" ;;
  rest) $R $T1 --tasks rte --variants inter; stamp "table1 rte inter"
     $R huang2020-table6 $J --train-limit 5000 --out runs/i10/s8-sst2-5k-joint; stamp "table6 joint" ;;
esac
stamp "lane $LANE done"
