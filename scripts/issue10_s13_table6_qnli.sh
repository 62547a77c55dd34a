#!/bin/bash
# Session 13, second lane for issue 10 once the issue-11 lane is done (WAIT_PID: its queue's shell): Table 6 with
# the encoder fine-tuned for the QNLI-dev public corpus, the last of scripts/issue10_s13_queue.sh's corpora, so that
# the two lanes never run the same corpus (each corpus's run keeps its own checkpoint beside its result).
# Usage: WAIT_PID=<pid> nohup bash scripts/issue10_s13_table6_qnli.sh > runs/i10/s13-table6-qnli.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
wait_pid 30
nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table6 --scale cpu --mode joint --batch-size 32 --epochs 3 \
   --train-limit 5000 --public qnli-dev --out runs/i10/s8-sst2-5k-joint
stamp "table6 joint qnli-dev"
