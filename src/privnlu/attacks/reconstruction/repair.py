"""Repair of duplicate groups after nmf (privnlu's own step, not in Xie & Hong 2021).

Clique growth can split one original's encodings into two seed groups (at k = 1 the pair network calls 12 % of
the identical pairs "different" on a CoLA release). Symmetric NMF then keeps two columns on that original, and an
original with no seed stays unfound: on a CoLA (1, 1) release nmf once found only 96
originals, with 4 groups on an original that another group already had. The repair frees every group that shares at least half its members with an earlier group and
seeds it anew on the encodings that sit in fewer than ``k`` groups (each encoding mixes ``k`` originals, so the
encodings of an unfound original are exactly the under-covered ones): the under-covered encoding with the most
affinity to the others, plus its ``size - 1`` most similar under-covered encodings. nmf then runs again from
the kept groups and the new seeds.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from .sparse import _membership

#: ``row(i) -> (columns, affinities)`` of encoding ``i`` in the attack's affinity (dense or a k-NN graph)
AffinityRow = Callable[[int], tuple[np.ndarray, np.ndarray]]


def duplicate_groups(groups: list[torch.Tensor], n_enc: int, overlap: float = 0.5) -> list[int]:
    """Groups (in order) that share at least ``overlap`` of their members with an earlier, kept group."""
    M = _membership(groups, n_enc)
    shared = (M.T @ M).tocsr()
    kept: set[int] = set()
    dup = []
    for j, g in enumerate(groups):
        a, b = shared.indptr[j], shared.indptr[j + 1]
        others = {int(c) for c, v in zip(shared.indices[a:b], shared.data[a:b]) if c != j and v >= overlap * len(g)}
        if others & kept:
            dup.append(j)
        else:
            kept.add(j)
    return dup


def reseed_duplicates(groups: list[torch.Tensor], n_enc: int, k: int, size: int, row: AffinityRow,
                      overlap: float = 0.5) -> tuple[list[torch.Tensor], list[int]]:
    """The groups with every duplicate replaced by a new seed on under-covered encodings (module docstring), and
    the indices of the replaced groups (empty: nothing to repair)."""
    dup = duplicate_groups(groups, n_enc, overlap)
    if not dup:
        return groups, []
    kept = [g for j, g in enumerate(groups) if j not in set(dup)]
    count = np.bincount(np.concatenate([g.numpy() for g in kept]), minlength=n_enc) if kept else np.zeros(n_enc, int)
    out, replaced = list(groups), []
    for j in dup:
        cand = np.flatnonzero(count < k)
        if len(cand) < 2:
            break
        is_cand = np.zeros(n_enc, dtype=bool)
        is_cand[cand] = True
        mass = np.array([_restricted(row(int(i)), is_cand)[1].sum() for i in cand])
        seed = int(cand[int(np.argmax(mass))])
        cols, vals = _restricted(row(seed), is_cand)
        keep = cols != seed
        cols, vals = cols[keep], vals[keep]
        members = np.concatenate([[seed], cols[np.argsort(-vals, kind="stable")[: size - 1]]]).astype(np.int64)
        out[j] = torch.from_numpy(np.sort(members))
        count[members] += 1
        replaced.append(j)
    return out, replaced


def _restricted(r: tuple[np.ndarray, np.ndarray], keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cols, vals = r
    m = keep[cols]
    return cols[m], vals[m]
