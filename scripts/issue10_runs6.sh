#!/bin/bash
# Session-5 ordering of the issue-10 queues: when queue 4 has finished SST-2 (its TextHide-inter result exists),
# stop it, run queue 5 (DP-IE fine-tuned through the noise), then resume queue 4's remaining tasks.
# Usage: nohup bash scripts/issue10_runs6.sh > runs/i10/queue6.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
until ls runs/i10/table1-joint/sst2-*inter*joint.json >/dev/null 2>&1; do sleep 30; done
pkill -f issue10_runs4.sh; pkill -f "huang2020-table1 --scale cpu --mode joint"
echo "sst2 done, queue 4 stopped $(date -u +%T)"
bash scripts/issue10_runs5.sh
bash scripts/issue10_runs4.sh
