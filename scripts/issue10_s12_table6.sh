#!/bin/bash
# Session 12, issue 10 section 3: TextHide Table 6 (intra vs inter over public corpora) at --scale cpu with the frozen
# encoder (20,000 SST-2 examples, 20 epochs, epoch chosen on 10% of train; the quick-scale table of docs/results.md
# 1c tested nothing). Three independent repeats (fresh secrets from the OS CSPRNG, no --seed), one folder each, so
# the report gives every cell's mean and its runs. A finished folder is read back (resumes).
# Usage: nohup bash scripts/issue10_s12_table6.sh > runs/i10/s12-table6.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
for r in "" -r2 -r3; do
  nice -n 5 $PY -m privnlu.cli.main reproduce huang2020-table6 --scale cpu --quiet --out runs/i10/s12-table6-frozen$r
  echo "== table6 frozen${r:- r1} $(date -u +%T)"
done
