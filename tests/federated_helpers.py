"""Test helpers for the federated tests: secret-leak detectors (and the in-process Grid, re-exported)."""

from __future__ import annotations

import numpy as np
import torch

from privnlu.federated.inprocess import InProcessGrid, ensure_task_identity  # noqa: F401 - re-exported for the tests


def max_abs_cosine(arrays: list[np.ndarray], secrets: torch.Tensor) -> float:
    """The largest |cos| between any row or column of any array and any secret vector
    (a vector recoverable up to scale from a message scores 1)."""
    s = torch.nn.functional.normalize(secrets.double(), dim=1)
    best = 0.0
    for a in arrays:
        t = torch.from_numpy(np.asarray(a, dtype=np.float64))
        if t.ndim == 1:
            t = t[None]
        if t.ndim != 2:
            t = t.reshape(t.shape[0], -1)
        for vecs in (t, t.T):
            if vecs.shape[1] != s.shape[1]:
                continue
            v = torch.nn.functional.normalize(vecs, dim=1)
            ok = vecs.norm(dim=1) > 1e-12
            if ok.any():
                best = max(best, float((v[ok] @ s.T).abs().max()))
    return best
