#!/bin/sh
# Qu et al. Table 6 at an accelerator's scale (recipe qu2021-table6-gpu) on a lent GPU machine with no network.
#
# Run from the repository root, with .gpu/carry (scripts/gpu/bundle.py) beside the working tree. It installs the
# carried wheels, unpacks the float16 MiniLM and the corpus file into $RUN (default /tmp/privnlu-gpu), and runs the
# recipe into $RUN/table6-gpu, resuming what an earlier call on the same machine finished. Every 15 s, and at the
# end, it packs the finished records into $OUT/records.tar (the log goes to $OUT/log.txt), so a run stopped at a
# time limit still returns what it finished. Extra arguments go to `privnlu reproduce` (e.g. --objectives).
#   PYTHON (default python3), DEVICE (default cuda), RUN, OUT, CARRY (default .gpu/carry).
set -eu
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
RUN=${RUN:-/tmp/privnlu-gpu}
OUT=${OUT:-$RUN/out}
CARRY=${CARRY:-.gpu/carry}
MODEL=$RUN/all-MiniLM-L6-v2-fp16
RESULTS=$RUN/table6-gpu
mkdir -p "$RUN/site" "$OUT" "$RESULTS"

if [ ! -f "$MODEL/model.safetensors" ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$RUN/site" \
    "$CARRY"/whl/*.whl
  rm -rf "$MODEL" && cp -r "$CARRY/all-MiniLM-L6-v2-fp16" "$MODEL"
  "$PY" - "$MODEL" "$CARRY/wiki.zip" "$RUN/site" <<'EOF'
import lzma, shutil, sys, zipfile
from pathlib import Path
model, wiki, site = map(Path, sys.argv[1:])
with lzma.open(model / "model.safetensors.xz") as fin, open(model / "model.safetensors.tmp", "wb") as fout:
    shutil.copyfileobj(fin, fout)
(model / "model.safetensors.xz").unlink()
(model / "model.safetensors.tmp").rename(model / "model.safetensors")
zipfile.ZipFile(wiki).extractall(site)
EOF
fi
export PYTHONPATH="$PWD/src:$RUN/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1

pack() {
  (cd "$RESULTS" && ls -- *.json >/dev/null 2>&1 && tar -cf "$OUT/records.tar.tmp" -- *.json reproduce.sh \
    && mv "$OUT/records.tar.tmp" "$OUT/records.tar") || true
}
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda",
torch.cuda.is_available() and torch.cuda.get_device_name(0))' | tee -a "$OUT/log.txt"
"$PY" -m privnlu.cli.main reproduce qu2021-table6-gpu --device "$DEVICE" --model "$MODEL" \
  --data-dir "$CARRY/glue" --out "$RESULTS" "$@" >>"$OUT/log.txt" 2>&1 &
JOB=$!
while kill -0 "$JOB" 2>/dev/null; do sleep 15; pack; done
wait "$JOB" && RC=0 || RC=$?
pack
tail -n 5 "$OUT/log.txt"
exit "$RC"
