"""Cancelling the noise of Algorithm 1 as printed (Xie & Hong 2022): one noise vector per batch.

Under the ``per-batch`` reading every encoding of batch ``b`` is ``e_i = s_i + N_b``, with ``s_i`` the clipped
mixture (``||s_i|| <= C``) and one draw ``N_b`` for the whole batch. At the noise the calibration gives,
``||N_b||`` dwarfs ``||s_i||``, so the encodings of one batch point the same way (cosine near 1) and those of two
batches do not (cosine near 0, independent draws in ``d`` dimensions). The attacker groups the release by cosine
similarity, and replaces each group's mean by ``mu``, its estimate of the mean noise-free encoding::

    e_i - mean_b(e) + mu = s_i - mean_b(s) + mu

which holds no noise at all: what is left is ``s_i`` up to the offset ``mean_b(s) - mu``, shared by the whole batch.
With no mask (Algorithm 1) and mixing weights that sum to 1, ``mean_b(s)`` is near the mean clipped
representation of the batch's examples, which the attacker estimates from its auxiliary data.
"""

from __future__ import annotations

import torch

#: cosine above which two encodings are taken to share a noise draw
SAME_DRAW_COSINE = 0.5


def batch_groups(enc: torch.Tensor, *, threshold: float = SAME_DRAW_COSINE, block: int = 1024) -> torch.Tensor:
    """A group id per encoding: the connected components of "cosine > ``threshold``" (union-find, ``block`` rows
    of the cosine matrix at a time)."""
    unit = enc.float() / enc.float().norm(dim=1, keepdim=True).clamp_min(1e-12)
    parent = list(range(len(unit)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for start in range(0, len(unit), block):
        sim = unit[start:start + block] @ unit.T
        rows, cols = (sim > threshold).nonzero(as_tuple=True)
        for i, j in zip((rows + start).tolist(), cols.tolist()):
            ri, rj = root(i), root(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
    roots = torch.tensor([root(i) for i in range(len(unit))])
    return torch.unique(roots, return_inverse=True)[1]


def cancel_batch_noise(enc: torch.Tensor, mu: torch.Tensor, *,
                       threshold: float = SAME_DRAW_COSINE) -> tuple[torch.Tensor, int]:
    """``e_i - mean_b(e) + mu`` for each group ``b`` of :func:`batch_groups` (module docstring), and the number of
    groups. A group of one encoding has no partner to cancel against and is left as it is."""
    groups = batch_groups(enc, threshold=threshold)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    sums = torch.zeros(n_groups, enc.shape[1], dtype=enc.dtype).index_add_(0, groups, enc)
    sizes = torch.bincount(groups, minlength=n_groups).to(enc.dtype)
    shift = sums / sizes[:, None] - mu.to(enc.dtype)
    shift[sizes < 2] = 0.0
    return enc - shift[groups], n_groups


def mean_clean_encoding(aux_x: torch.Tensor, clip_rows) -> torch.Tensor:
    """``mu``: the mean clipped auxiliary representation (the mean noise-free encoding without a mask, since each
    encoding's mixing weights sum to 1); ``clip_rows``: the public mechanism's clipping."""
    return clip_rows(aux_x.float()).mean(dim=0)
