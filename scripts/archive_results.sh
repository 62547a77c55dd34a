#!/bin/bash
# Copy the finished result JSONs of the long runs (runs/i10, runs/i11, runs/dchi_*) into results/, which is
# committed, so that the docs' tables can be regenerated on a fresh clone and an interrupted queue can resume in a
# later session (scripts/restore_results.sh copies them back). Checkpoints (hidden *.ckpt folders) stay out: they
# hold model weights and mask pools. Records carry no local paths (tests/test_results_archive.py checks).
set -eu
cd "$(dirname "$0")/.."
for src in runs/i10 runs/i11 runs/dchi_t45 runs/dchi_pretrain_curve; do
  [ -d "$src" ] || continue
  find "$src" -name '*.json' -not -path '*.ckpt/*' | while read -r f; do
    dst="results/${f#runs/}"
    mkdir -p "$(dirname "$dst")"
    cmp -s "$f" "$dst" || cp "$f" "$dst"
  done
done
echo "results/: $(find results -name '*.json' | wc -l) files"
