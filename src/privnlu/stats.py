"""Small statistics shared by the attacks, the audit and the report: exact binomial intervals and the paired t-test."""

from __future__ import annotations

import numpy as np

from .errors import PrivnluError

#: two-sided confidence of every interval privnlu reports
CONFIDENCE = 0.95


def clopper_pearson(k: np.ndarray | int, n: int, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson interval for ``k`` successes in ``n`` trials (vectorised; scipy beta quantiles)."""
    from scipy.stats import beta

    k = np.asarray(k, dtype=np.float64)
    a = (1 - confidence) / 2
    lo = np.where(k > 0, beta.ppf(a, np.maximum(k, 1e-300), n - k + 1), 0.0)
    hi = np.where(k < n, beta.ppf(1 - a, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    return lo, hi


def paired_t_test(a: list[float], b: list[float]) -> dict:
    """Student's paired t-test of ``a - b`` (the paper's test for its Delta marks; here paired by seed: one seed
    fixes the privatized data, order, initialisation and dropout of both runs). Two-sided p; n >= 2."""
    if len(a) != len(b) or len(a) < 2:
        raise PrivnluError("a paired t-test needs two equally long lists of at least 2 runs")
    from scipy import stats as scipy_stats

    diff = [x - y for x, y in zip(a, b)]
    mean = sum(diff) / len(diff)
    if all(d == diff[0] for d in diff):  # zero variance: t undefined
        return {"n": len(diff), "mean_diff": mean, "t": None, "p": 0.0 if mean != 0 else 1.0}
    res = scipy_stats.ttest_rel(a, b)
    return {"n": len(diff), "mean_diff": mean, "t": float(res.statistic), "p": float(res.pvalue)}
