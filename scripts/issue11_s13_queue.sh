#!/bin/bash
# Session 13 queue for issue 11, one thread beside the issue-10 lane (scripts/issue10_s13_queue.sh).
# 1. The scaling curve's last point, n = 3,000 private examples (150,000 encodings), session 8's attack and command
#    (scripts/issue11_s8_queue.sh stage 6) on one thread: CPU seconds are its clock.
# 2. Table 7's 3,000-step point (scripts/issue11_s10_table7.sh: 2,000 more text-mode pretraining steps from the
#    1,000-step encoder, then three fine-tunes at the Table 4 protocol).
# Usage: nohup bash scripts/issue11_s13_queue.sh > runs/i11/s13-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
B="nice -n 10 $SCALE_BENCH --threads 1 --graph 200"
mkdir -p runs/i11/s8-scale
[ -f runs/i11/s8-scale/scale_sst2_n3000_g200.json ] || $B --n 3000 --out runs/i11/s8-scale/scale_sst2_n3000_g200.json
stamp "scaling n = 3,000"
bash scripts/issue11_s10_table7.sh
stamp "lane done"
