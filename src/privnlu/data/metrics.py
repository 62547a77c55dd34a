"""GLUE metrics, computed with scikit-learn and SciPy."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

Metric = Callable[[np.ndarray, np.ndarray], dict[str, float]]


def accuracy(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    return {"accuracy": float(accuracy_score(gold, pred))}


def f1_accuracy(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    return {"f1": float(f1_score(gold, pred)), "accuracy": float(accuracy_score(gold, pred))}


def matthews(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    # accuracy beside MCC: Xie & Hong 2022 plot CoLA in accuracy
    return {"mcc": float(matthews_corrcoef(gold, pred)), "accuracy": float(accuracy_score(gold, pred))}


def pearson_spearman(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    if np.ptp(pred) == 0 or np.ptp(gold) == 0:  # a constant has no correlation (scipy would return nan)
        return {"pearson": 0.0, "spearman": 0.0}
    return {"pearson": float(pearsonr(pred, gold)[0]), "spearman": float(spearmanr(pred, gold)[0])}


METRICS: dict[str, Metric] = {
    "accuracy": accuracy,
    "f1_accuracy": f1_accuracy,
    "matthews": matthews,
    "pearson_spearman": pearson_spearman,
}

#: The single number used for tables and plots, per metric family (GLUE convention:
#: the mean of F1 and accuracy, and of Pearson and Spearman, is also reported).
PRIMARY = {"accuracy": "accuracy", "f1_accuracy": "f1", "matthews": "mcc", "pearson_spearman": "pearson"}


def compute(metric: str, pred: Sequence[float], gold: Sequence[float]) -> dict[str, float]:
    """Evaluate ``metric`` and add ``score``, the task's headline number (x100)."""
    out = METRICS[metric](np.asarray(pred), np.asarray(gold))
    out["score"] = 100.0 * out[PRIMARY[metric]]
    return out


def majority(metric: str, train_labels: Sequence[float], gold: Sequence[float], *, regression: bool = False) -> dict[str, float]:
    """The score of predicting train's most frequent label (its mean for regression) on ``gold``: the floor a
    table must show beside a score (MRPC's F1 of "always paraphrase" is 81.2). ``score`` x100; ``accuracy`` x100
    where the metric has one."""
    from collections import Counter

    train = np.asarray(train_labels).tolist()  # plain numbers: a tensor's elements hash by identity, not value
    const = float(np.mean(train)) if regression else Counter(train).most_common(1)[0][0]
    m = compute(metric, np.full(len(gold), const), np.asarray(gold))
    return {"score": m["score"], **({"accuracy": 100 * m["accuracy"]} if "accuracy" in m else {})}
