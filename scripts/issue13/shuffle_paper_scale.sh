#!/bin/bash
# reconstruction attack at the paper's scale (CoLA, 100 x 50), epoch-ordered release (base) vs shuffled (i13); seed 0
# usage (from the repository root): scripts/issue13/shuffle_paper_scale.sh BASE_TREE NEW_TREE
# base tree: git archive 3daa4e8 src tests | tar -x -C /tmp/i13_base ; results in /tmp/i13_runs/rec_*.json
mkdir -p /tmp/i13_runs
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PRIVNLU_DATA=${PRIVNLU_DATA:-../shared/data/glue}
for d in "${1:-/tmp/i13_base}" "${2:-$PWD}"; do
  name=$(basename $d)
  PYTHONPATH=$d/src nice -n 10 .venv/bin/python -m privnlu.cli.main attack reconstruct --task cola --queries 100 --encodings-per-example 50 \
     --conditions 1:2,1:4 --seed 0 --quiet --no-sbert --out /tmp/i13_runs/rec_$name.json > /tmp/i13_runs/rec_$name.log 2>&1
done
