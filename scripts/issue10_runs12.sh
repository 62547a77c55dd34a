#!/bin/bash
# Session 7: TextHide Table 1 joint, rerun after the shared-encoder fix (every joint run used to start from the
# previous run's fine-tuned encoder, see docs/results.md section 1). The baselines of runs/i10/table1-joint were
# each the first run of their process (pretrained start), so they are copied, not rerun; STS-B inter (the first run
# of its process, started before the fix) likewise. Every run resumes from its checkpoint when the queue is rerun.
# Usage: nohup bash scripts/issue10_runs12.sh > runs/i10/queue12.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
export OMP_NUM_THREADS=2
out=runs/i10/table1-joint-s7
mkdir -p $out
for f in sst2-baseline cola-baseline stsb-baseline stsb-texthide-inter-m256-k4; do
  [ -e $out/$f-joint.json ] || cp runs/i10/table1-joint/$f-joint.json $out/ 2>/dev/null
done
t1() { nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
         --tasks $1 --out $out; echo "$1 done $(date -u +%T)"; }
t1 sst2
# section 8.2a (scripts/issue10_runs5.sh) again: only its baseline was a first run; the baseline is copied
x=runs/i10/xie2022-figure1-joint-s7
mkdir -p $x
[ -e $x/sst2-baseline-joint.json ] || cp runs/i10/xie2022-figure1-joint/sst2-baseline-joint.json $x/
nice -n 10 $PY -m privnlu.cli.main reproduce xie2022-figure1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
    --train-limit 5000 --tasks sst2 --dp-epsilons 20,8 --dp-mechanisms gaussian --dp-calibrations correct --out $x
echo "xie2022 joint done $(date -u +%T)"
t1 cola
t1 stsb
echo "queue done $(date -u +%T)"
