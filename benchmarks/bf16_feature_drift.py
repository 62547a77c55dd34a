"""How far bf16-autocast features are from fp32 ones: cosine and relative L2 per example.

Reads (or computes and caches) both precisions of the packaged encoder's features through the pipeline's feature
cache, so after benchmarks/pooling_frozen.py (run with --bf16 off and on) it only reads files:

    PRIVNLU_DATA=../shared/data/glue python benchmarks/bf16_feature_drift.py --tasks sst2:10000,mrpc --pooling mean
"""

from __future__ import annotations

import argparse

import torch

from common import save
from privnlu.training.engine import RunSpec, prepare
from privnlu.models import load_encoder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="sst2:10000,mrpc")
    ap.add_argument("--pooling", default="mean")
    args = ap.parse_args()
    enc = load_encoder(None, pooling=args.pooling)
    out = {"pooling": args.pooling, "results": {}}
    for item in args.tasks.split(","):
        task, _, limit = item.partition(":")
        feats = {}
        for bf16 in (False, True):
            spec = RunSpec(task=task, pooling=args.pooling, train_limit=int(limit) if limit else None, bf16=bf16)
            prep = prepare(spec, progress=False, encoder=enc)
            feats[bf16] = torch.cat([prep.train_x, *prep.eval_x.values()])
        a, b = feats[False], feats[True]
        cos = torch.nn.functional.cosine_similarity(a, b, dim=1)
        rel = (a - b).norm(dim=1) / a.norm(dim=1)
        out["results"][task] = {"n": len(a), "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
                                "relative_l2_mean": float(rel.mean()), "relative_l2_max": float(rel.max())}
    save("bf16_feature_drift", out)


if __name__ == "__main__":
    main()
