"""Losses for mixed labels."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def soft_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-mean_i sum_c y~_ic log softmax(z_i)_c`` for soft (mixed) labels ``y~``."""
    return -(targets * F.log_softmax(logits, dim=-1)).sum(dim=-1).mean()


def task_loss(logits: torch.Tensor, targets: torch.Tensor, *, regression: bool) -> torch.Tensor:
    """Soft-label cross-entropy for classification, MSE for regression (STS-B)."""
    if regression:
        return F.mse_loss(logits.squeeze(-1), targets.squeeze(-1))
    return soft_cross_entropy(logits, targets)


def targets_from_labels(labels: torch.Tensor, num_labels: int, *, regression: bool) -> torch.Tensor:
    """One-hot rows for classes, a (n, 1) column for regression scores."""
    if regression:
        return labels.float().reshape(-1, 1)
    return F.one_hot(labels.long(), num_labels).float()
