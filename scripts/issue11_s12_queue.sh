#!/bin/bash
# Session 12 queue for issue 11, one thread beside the issue-10 lane (scripts/issue10_s12_queue.sh): Qu et al.
# Table 7's 1,000-step point (scripts/issue11_s10_table7.sh: the M_rep warm head, 1,000 text-mode denoising steps,
# then three text-mode fine-tunes), then Table 5's MRPC seeds at the protocol of seed 0 (scripts/issue11_s8_queue.sh
# stage 5), then Table 7's 3,000-step stage. Every stage resumes (finished runs are read back). Two copies must not
# share a seed: a seed's runs share one folder and its checkpoints.
#   WAIT_PID: a process to wait for first; SEEDS: the MRPC seeds (default "1 2"); TABLE7=0 skips the Table 7 stages.
# As run in session 12: the first copy (Table 7's pretraining and first fine-tune) was stopped after that fine-tune's
# start and restarted as `WAIT_PID=<that fine-tune> SEEDS=1`; the issue-10 lane went on with
# `WAIT_PID=<its queue> SEEDS=2 TABLE7=0`.
# Usage: nohup bash scripts/issue11_s12_queue.sh > runs/i11/s12-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
wait_pid
[ "${TABLE7:-1}" = 1 ] && STOP_AT=1000 bash scripts/issue11_s10_table7.sh
FT="dchi finetune --encoders transformer,bilstm --modes null,token,text --etas 50,100,150 --max-length 128 --batch-size 32 --epochs 3 --quiet"
for s in ${SEEDS:-1 2}; do
  nice -n 19 $PY -m privnlu.cli.main $FT --task mrpc --seed $s --out runs/dchi_t45/mrpc_s$s; stamp "t5 mrpc seed $s"
done
[ "${TABLE7:-1}" = 1 ] && bash scripts/issue11_s10_table7.sh
stamp "queue done"
