"""Right-padding of variable-length token sequences into one batch tensor and its attention mask."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pad(seqs: Sequence[torch.Tensor], value: float = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad 1-d (L,) or 2-d (L, n) tensors to the longest in the batch; also the attention mask (B, L_max)."""
    width = max(len(s) for s in seqs)
    out = seqs[0].new_full((len(seqs), width, *seqs[0].shape[1:]), value)
    mask = torch.zeros(len(seqs), width, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
        mask[i, : len(s)] = 1
    return out, mask
