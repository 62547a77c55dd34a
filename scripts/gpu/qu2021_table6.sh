#!/bin/sh
# Qu et al. Table 6 at an accelerator's scale (recipe qu2021-table6-gpu) on a lent GPU machine with no network.
#
# Run from the repository root, with .gpu/carry (scripts/gpu/bundle.py) beside the working tree. It installs the
# carried wheels and the corpus file into $RUN (default /tmp/privnlu-gpu), unpacks the float16 MiniLM into
# .gpu/all-MiniLM-L6-v2-fp16 (the --model of results/qu2021/table6-gpu/reproduce.sh), and runs the recipe into
# $RUN/table6-gpu, resuming what the committed records in results/qu2021/table6-gpu and an earlier call on the
# same machine finished. On an H200 one objective's stage and its three fine-tuning runs take about 8 minutes, the
# starting encoder's three runs about 1.5; with `--jobs 6 --threads 2`, two objectives' stages run side by side in
# 8.5 to 9.5 minutes and their six fine-tuning runs together in under a minute more. Every PACK_EVERY seconds, and
# at the end, it packs the finished records into $OUT/records.tar (the log goes to $OUT/log.txt), so a run stopped
# at a time limit still returns what it finished. Extra arguments go to `privnlu reproduce` (default objectives:
# denoising, vanilla, probability, in that order).
#   PYTHON (default python3), DEVICE (default cuda), RUN, OUT, CARRY (default .gpu/carry), PACK_EVERY (default 15),
#   SOURCE_COMMIT (the commit the working tree was copied from, which bundle.py prints; the records name it, since
#   the copy's .git may be an older one; "unknown" where not given).
set -eu
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
RUN=${RUN:-/tmp/privnlu-gpu}
OUT=${OUT:-$RUN/out}
CARRY=${CARRY:-.gpu/carry}
MODEL=.gpu/all-MiniLM-L6-v2-fp16
RESULTS=$RUN/table6-gpu
PACK_EVERY=${PACK_EVERY:-15}
mkdir -p "$RUN/site" "$OUT" "$RESULTS"
# resume from the committed records: a record made with the same settings is read back, not rerun
for f in results/qu2021/table6-gpu/*.json; do
  if [ -e "$f" ] && [ ! -e "$RESULTS/${f##*/}" ]; then cp "$f" "$RESULTS/"; fi
done

if [ ! -d "$RUN/site/pydantic" ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$RUN/site" \
    "$CARRY"/whl/*.whl
  "$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$CARRY/wiki.zip" "$RUN/site"
fi
if [ ! -f "$MODEL/model.safetensors" ]; then
  rm -rf "$MODEL" && cp -r "$CARRY/all-MiniLM-L6-v2-fp16" "$MODEL"
  "$PY" - "$MODEL" <<'EOF'
import lzma, shutil, sys
from pathlib import Path
model = Path(sys.argv[1])
with lzma.open(model / "model.safetensors.xz") as fin, open(model / "model.safetensors.tmp", "wb") as fout:
    shutil.copyfileobj(fin, fout)
(model / "model.safetensors.xz").unlink()
(model / "model.safetensors.tmp").rename(model / "model.safetensors")
EOF
fi
export PYTHONPATH="$PWD/src:$RUN/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
export PRIVNLU_SOURCE_COMMIT="${SOURCE_COMMIT:-unknown (a copied working tree)}"

pack() {
  (cd "$RESULTS" && ls -- *.json >/dev/null 2>&1 && tar -cf "$OUT/records.tar.tmp" -- *.json \
    && mv "$OUT/records.tar.tmp" "$OUT/records.tar") || true
}
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda",
torch.cuda.is_available() and torch.cuda.get_device_name(0))' | tee -a "$OUT/log.txt"
"$PY" -m privnlu.cli.main reproduce qu2021-table6-gpu --device "$DEVICE" --model "$MODEL" \
  --data-dir "$CARRY/glue" --out "$RESULTS" --objectives denoising,vanilla,probability "$@" >>"$OUT/log.txt" 2>&1 &
JOB=$!
while kill -0 "$JOB" 2>/dev/null; do sleep "$PACK_EVERY"; pack; done
wait "$JOB" && RC=0 || RC=$?
pack
tail -n 5 "$OUT/log.txt"
exit "$RC"
