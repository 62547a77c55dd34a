#!/bin/bash
# Session 12, issue 10: does the fine-tuned MiniLM baseline learn RTE at a lower encoder learning rate? Table 1's RTE
# baseline (encoder lr 3e-5) memorised the training pairs and scored the majority rate (docs/results.md 1); this is
# the same recipe and budget with encoder lr 1e-5, into its own folder. WAIT_PID: a process to wait for first
# (session 12: Table 5's MRPC seed 1 on the same thread). Resumes (a finished run is read back).
# Usage: nohup bash scripts/issue10_s12_rte_lr.sh > runs/i10/s12-rte-lr.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
wait_pid
nice -n 10 $PY -m privnlu.cli.main reproduce huang2020-table1 --scale cpu --mode joint --batch-size 32 --epochs 3 \
   --tasks rte --variants baseline --encoder-lrs 1e-5 --out runs/i10/s12-rte-encoder-lr1e-5
stamp "rte baseline, encoder lr 1e-5"
