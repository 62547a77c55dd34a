"""Reference scores that need no model: the majority class of train, scored on dev.

``python -m privnlu.experiments.baselines sst2 cola mrpc rte stsb tweets`` prints
them; docs/results.md sets them beside the trained models, because some metrics
reward a constant prediction (MRPC's F1 of "always paraphrase" is 81.2).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np

from ..data import get_task
from ..data.metrics import compute


def majority_scores(task_name: str, data_dir: str | None = None) -> dict[str, dict[str, float]]:
    """The task metric of predicting the most frequent train label (the train mean for regression)."""
    task = get_task(task_name)
    train = task.load("train", data_dir)
    const = float(np.mean(train.labels)) if task.is_regression else Counter(train.labels).most_common(1)[0][0]
    out = {}
    for split in task.eval_splits:
        gold = np.asarray(task.load(split, data_dir).labels)
        out[split] = compute(task.metric, np.full(len(gold), const), gold)
    return out


def main(argv: list[str]) -> None:
    for name in argv or ["sst2", "cola", "mrpc", "rte", "stsb", "tweets"]:
        for split, m in majority_scores(name).items():
            print(f"{name:8s} {split:14s} " + "  ".join(f"{k} {100 * v if k != 'score' else v:.2f}" for k, v in m.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
