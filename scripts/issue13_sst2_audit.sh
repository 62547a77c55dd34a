#!/bin/bash
# Issue 13: the full SST-2 audit of every scheme for docs/results.md, with the audit's defaults (100 private
# sentences, 5,000 distractors, 50 encodings per sentence, 2,000 auxiliary examples, TextHide (256, 4), DP instance
# encoding as the paper's Algorithm 1 at epsilon 1/8/64 with the sound Gaussian calibration, d_chi at token
# inversion 0.1/0.34/0.7), frozen encoder, the first 10,000 training sentences, the full dev set. Resumes.
# Usage: nohup bash scripts/issue13_sst2_audit.sh > runs/i13/audit-sst2.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
export OMP_NUM_THREADS=2
mkdir -p runs/i13
echo "start $(date -u +%T)"
nice -n 10 $PY -m privnlu.cli.main audit --task sst2 --train-limit 10000 --out runs/i13/audit-sst2
echo "audit done $(date -u +%T)"
