"""Test helpers for the federated tests: secret-leak detectors, a dropout-free recorded run
(and the in-process Grid, re-exported)."""

from __future__ import annotations

import numpy as np
import torch

from privnlu.federated.inprocess import InProcessGrid, ensure_task_identity  # noqa: F401 - re-exported for the tests


def capture_without_dropout(cfg, path):
    """Run ``cfg`` in process with the clients' encoder dropout off (the attacker's best case: exact inversion
    assumes it; docs/design/federated.md), record its wire to ``path`` and return the loaded capture."""
    from privnlu.federated.client import _encoder, make_client_app
    from privnlu.federated.server import run_server
    from privnlu.federated.wire import WireLog, load_capture

    drops = [m for m in _encoder(cfg).modules() if isinstance(m, torch.nn.Dropout)]
    saved = [m.p for m in drops]
    try:
        for m in drops:
            m.p = 0.0
        log = WireLog()
        run_server(InProcessGrid(make_client_app(cfg), cfg.clients), cfg, out=None, wire=log)
    finally:
        for m, p in zip(drops, saved):
            m.p = p
    return load_capture(log.save(path))


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


def token_row_leaks(arrays: dict[str, np.ndarray], token_ids: set[int], *, min_rows: int = 3,
                    precision: float = 0.9) -> list[str]:
    """Names of the arrays whose non-zero row (or column) pattern identifies the client's token ids: some but not
    all rows are exactly zero, at least ``min_rows`` are non-zero, and at least ``precision`` of the non-zero row
    indices are ids of the client's tokens. A lookup table's gradient fires (its rows are the batch's ids); a
    dense gradient, a position table (rows 0..L-1, unused ids) or an all-zero array does not."""
    hits = []
    for name, a in arrays.items():
        t = np.asarray(a)
        if t.ndim < 2:
            continue
        t = t.reshape(t.shape[0], -1)
        for mat in (t, t.T):
            rows = np.flatnonzero(np.any(mat != 0, axis=1))
            if min_rows <= len(rows) < mat.shape[0] and np.isin(rows, list(token_ids)).mean() >= precision:
                hits.append(name)
                break
    return hits
