"""AUDITOR: scoring recovered sentences against a client's true batch (ROUGE-1/2 and exact sentences).

* Units are **token ids** (the tokenizer's word pieces), with ``[CLS]``, ``[SEP]`` and ``[PAD]`` dropped; ROUGE-n
  is the standard F1 of clipped n-gram overlap (Lin 2004): ``P = overlap / |hyp n-grams|``,
  ``R = overlap / |ref n-grams|``, ``F = 2PR / (P + R)`` (0 when either side has no n-gram).
* A batch is scored by a one-to-one matching of recovered to true sentences that maximises the summed ROUGE-1 F1
  (Hungarian assignment; a tie goes to the recovery identical to the true sentence); a true sentence left unmatched (fewer recoveries than sentences) scores 0. Reported:
  the mean over true sentences of ROUGE-1, ROUGE-2 and the exact-sentence indicator (the matched recovery equals
  the true sentence, special tokens included).
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def _ngrams(ids: list[int], n: int) -> Counter:
    return Counter(tuple(ids[i:i + n]) for i in range(len(ids) - n + 1))


def rouge_n(hyp: list[int], ref: list[int], n: int) -> float:
    """ROUGE-n F1 of ``hyp`` against ``ref`` (token ids)."""
    h, r = _ngrams(hyp, n), _ngrams(ref, n)
    overlap = sum((h & r).values())
    if not overlap:
        return 0.0
    p, rec = overlap / sum(h.values()), overlap / sum(r.values())
    return 2 * p * rec / (p + rec)


def score_batch(recovered: list[list[int]], true: list[list[int]], special: set[int]) -> dict:
    """Mean ROUGE-1, ROUGE-2 and exact-sentence rate of a recovered batch (see the module note)."""
    from scipy.optimize import linear_sum_assignment

    strip = lambda s: [t for t in s if t not in special]  # noqa: E731
    hyp, ref = [strip(s) for s in recovered], [strip(s) for s in true]
    n = max(len(true), 1)
    if not recovered or not true:
        return {"rouge1": 0.0, "rouge2": 0.0, "exact": 0.0, "sentences": len(true), "recovered": len(recovered)}
    r1 = np.array([[rouge_n(h, r, 1) for h in hyp] for r in ref])  # (true, recovered)
    same = np.array([[float(h == t) for h in recovered] for t in true])
    rows, cols = linear_sum_assignment(-(r1 + 1e-3 * same))  # ties go to the identical sentence
    r2 = sum(rouge_n(hyp[c], ref[r], 2) for r, c in zip(rows, cols))
    exact = sum(recovered[c] == true[r] for r, c in zip(rows, cols))
    return {"rouge1": float(r1[rows, cols].sum() / n), "rouge2": float(r2 / n), "exact": exact / n,
            "sentences": len(true), "recovered": len(recovered)}
