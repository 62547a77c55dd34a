"""The defence settings an attack is run against, and the defender's release under one of them.

A :class:`Condition` names a TextHide setting (``m``, ``k``) or the random-guess baseline; :func:`release`
plays the defender and returns the release's payload with the ground truth that stays with the auditor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import PrivnluError
from ..mechanisms.release import SharedPayload, hide_dataset
from ..mechanisms.texthide import TextHide, check_k, m_label, parse_m
from ..rng import SecretGenerator


@dataclass(frozen=True)
class Condition:
    """A defence setting to attack; ``random`` is the random-guess baseline (no encoding is used)."""

    name: str
    m: float = 0
    k: int = 1
    random: bool = False

    def to_json(self) -> dict:
        return {"name": self.name, "m": m_label(self.m), "k": self.k, "random_guess": self.random}


# Huang et al. 2020, section 4.4 / Table 3
PAPER_CONDITIONS = (
    Condition("baseline", 0, 1),
    Condition("mix-only", 0, 4),
    Condition("texthide", 256, 4),
    Condition("random", random=True),
)


def parse_condition(text: str) -> Condition:
    """``baseline``, ``mix-only``, ``texthide``, ``random`` or ``m,k`` (e.g. ``16,4``)."""
    for c in PAPER_CONDITIONS:
        if text == c.name:
            return c
    try:
        m_text, k_text = text.split(":") if ":" in text else text.split("/")
        check_k(int(k_text))
        return Condition(f"m{m_label(parse_m(m_text))}-k{int(k_text)}", parse_m(m_text), int(k_text))
    except PrivnluError as exc:
        raise PrivnluError(f"condition '{text}': {exc}") from None
    except ValueError:
        raise PrivnluError(f"unknown condition '{text}'; use baseline, mix-only, texthide, random or M:K (e.g. 16:4)") from None


def one_hot(labels: torch.Tensor, num_labels: int | None = None) -> torch.Tensor:
    """One-hot rows over the task's ``num_labels`` classes (a mixed label's width must not depend on which
    classes the attacked sample happens to contain). ``None`` (Python callers without a task) infers
    ``max + 1``."""
    from ..training.losses import targets_from_labels

    labels = labels.long()
    if num_labels is None:
        num_labels = int(labels.max()) + 1 if len(labels) else 1
    if len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= num_labels):
        raise PrivnluError(f"labels must lie in 0..{num_labels - 1} for a task with {num_labels} classes")
    return targets_from_labels(labels, num_labels, regression=False)


def release(x: torch.Tensor, labels: torch.Tensor, cond: Condition, rng: SecretGenerator, *, batch_size: int = 64,
            hider: TextHide | None = None, num_labels: int | None = None) -> tuple[SharedPayload, torch.Tensor, TextHide]:
    """Defender side: encode ``x`` once; returns (payload, truth, hider), truth[i] = private index of encoding i."""
    hider = hider or TextHide(cond.m, cond.k, dim=x.shape[1], rng=rng)
    payload, key = hide_dataset(hider, x, one_hot(labels, num_labels), epochs=1, batch_size=batch_size)
    return payload, key.partners[:, 0].clone(), hider
