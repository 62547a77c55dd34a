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


#: resamples of the bootstrap interval of a score that is not a plain share (F1, MCC)
BOOTSTRAP_RESAMPLES = 2000


def score_interval(metric: str, pred: Sequence[float], gold: Sequence[float], confidence: float = 0.95) -> list[float] | None:
    """A 95 % interval of the headline score (x100) over the evaluation examples; ``None`` for regression.

    Accuracy: Clopper-Pearson on the correct count. F1 and MCC: the percentile bootstrap over examples
    (:data:`BOOTSTRAP_RESAMPLES` resamples of the confusion table, multinomial with its cell shares, fixed seed),
    each resample scored by the same formula as the point estimate (a zero denominator scores 0, as in scikit-learn).
    """
    if metric == "pearson_spearman":
        return None
    p, g = np.asarray(pred).astype(np.int64), np.asarray(gold).astype(np.int64)
    n = len(g)
    if n == 0:
        return None
    if metric == "accuracy":
        from ..stats import clopper_pearson

        lo, hi = clopper_pearson(int((p == g).sum()), n, confidence)
        return [round(100 * float(lo), 2), round(100 * float(hi), 2)]
    k = int(max(p.max(), g.max())) + 1
    cells = np.bincount(g * k + p, minlength=k * k) / n
    tables = np.random.default_rng(0).multinomial(n, cells, size=BOOTSTRAP_RESAMPLES).reshape(-1, k, k).astype(float)
    scores = _f1_of(tables) if PRIMARY[metric] == "f1" else _mcc_of(tables)
    a = (1 - confidence) / 2
    lo, hi = np.quantile(scores, [a, 1 - a])
    return [round(100 * float(lo), 2), round(100 * float(hi), 2)]


def _f1_of(tables: np.ndarray) -> np.ndarray:
    """Binary F1 of the positive class 1 of each (gold, pred) confusion table."""
    tp, fp, fn = tables[:, 1, 1], tables[:, 0, 1], tables[:, 1, 0]
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.maximum(den, 1e-300), 0.0)


def _mcc_of(tables: np.ndarray) -> np.ndarray:
    """Matthews correlation (multiclass, Gorodkin 2004) of each (gold, pred) confusion table."""
    c = np.trace(tables, axis1=1, axis2=2)
    s = tables.sum(axis=(1, 2))
    t, p = tables.sum(axis=2), tables.sum(axis=1)
    den = np.sqrt((s**2 - (p**2).sum(1)) * (s**2 - (t**2).sum(1)))
    return np.where(den > 0, (c * s - (p * t).sum(1)) / np.maximum(den, 1e-300), 0.0)


def reaches_majority(score: float, ci: Sequence[float] | None, majority: float) -> bool:
    """Whether a score cannot be told from always predicting the majority class: the lower end of its 95 % interval
    (the score itself where no interval was measured) is at or below the majority-class score."""
    low = ci[0] if ci else score
    return float(low) <= float(majority) + 1e-9


def majority(metric: str, train_labels: Sequence[float], gold: Sequence[float], *, regression: bool = False) -> dict[str, float]:
    """The score of predicting train's most frequent label (its mean for regression) on ``gold``: the floor a
    table must show beside a score (MRPC's F1 of "always paraphrase" is 81.2). ``score`` x100; ``accuracy`` x100
    where the metric has one."""
    from collections import Counter

    train = np.asarray(train_labels).tolist()  # plain numbers: a tensor's elements hash by identity, not value
    const = float(np.mean(train)) if regression else Counter(train).most_common(1)[0][0]
    m = compute(metric, np.full(len(gold), const), np.asarray(gold))
    return {"score": m["score"], **({"accuracy": 100 * m["accuracy"]} if "accuracy" in m else {})}
