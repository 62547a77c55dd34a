"""Frozen-encoder utility of ``cls`` vs ``mean`` pooling (issue 10, section 3).

For each task and pooling, the packaged encoder's features are cached once and a
frozen MLP head is trained with the pipeline's defaults (20 epochs, lr 1e-3,
batch 64, hidden d,d,d) over several experiment seeds. Writes
runs/bench/pooling_frozen.json (``--bf16 on``: pooling_frozen_bf16.json) with
the mean and spread of the dev score, every metric of every seed, and the
scores of always predicting the majority class beside them.

    PRIVNLU_DATA=../shared/data/glue python benchmarks/pooling_frozen.py \
        --tasks sst2:10000,mrpc --seeds 0,1,2

``task:N`` uses the first N training examples (the dev split is always whole).
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter
from dataclasses import replace

import numpy as np

from common import save
from privnlu.data import metrics as glue_metrics
from privnlu.training.engine import RunSpec, prepare, train_run
from privnlu.models import load_encoder
from privnlu.training import TrainConfig


def majority_metrics(task, labels) -> dict[str, float]:
    """The task's metrics for always predicting the most frequent dev label."""
    gold = np.array(labels)
    return glue_metrics.compute(task.metric, np.full_like(gold, Counter(labels).most_common(1)[0][0]), gold)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="sst2:10000,mrpc")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--poolings", default="cls,mean")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--bf16", default="off", help="feature precision: off (fp32, default), on")
    ap.add_argument("--name", help="record name under runs/bench (default: pooling_frozen, _bf16 with --bf16 on)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    out: dict = {"seeds": seeds, "epochs": args.epochs, "bf16": args.bf16, "results": {}}
    for item in args.tasks.split(","):
        task, _, limit = item.partition(":")
        for pooling in args.poolings.split(","):
            enc = load_encoder(None, pooling=pooling)
            base = RunSpec(task=task, pooling=pooling, train_limit=int(limit) if limit else None,
                           bf16=args.bf16 == "on", train=TrainConfig(epochs=args.epochs))
            prep = prepare(base, progress=False, encoder=enc)
            scores, evals = [], []
            for seed in seeds:
                spec = replace(base, train=TrainConfig(epochs=args.epochs, seed=seed))
                rec = train_run(spec, prep, progress=False, group="pooling")
                scores.append(rec["score"])
                evals.append(next(iter(rec["eval"].values())))
                print(f"{task} {pooling} seed {seed}: {rec['metric']} {rec['score']:.2f}", flush=True)
            dev = next(iter(prep.evals.values()))
            out["results"][f"{task}/{pooling}"] = {
                "task": task, "pooling": pooling, "metric": prep.task.metric, "n_train": len(prep.train),
                "n_dev": len(dev), "scores": scores, "mean": statistics.mean(scores),
                "stdev": statistics.stdev(scores) if len(scores) > 1 else 0.0,
                "evals": evals,
                "majority_dev": None if prep.task.is_regression else majority_metrics(prep.task, dev.labels),
            }
    save(args.name or "pooling_frozen" + ("_bf16" if args.bf16 == "on" else ""), out)


if __name__ == "__main__":
    main()
