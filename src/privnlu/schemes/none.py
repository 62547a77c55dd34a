"""``none``: no privatization, the baseline every scheme is measured against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Guarantee, Scheme, ThreatModel
from .registry import register


@register
@dataclass(frozen=True)
class NoPrivacy(Scheme):
    """The clean representations (or text) are released as they are."""

    name = "none"
    title = "no privacy"
    aliases = ("null",)  # Qu et al.'s "Null Privacy" fine-tuning mode
    level = "none"
    federated = True
    private = False
    finetune_mode = "null"  # Qu et al.'s "Null Privacy"
    threat = ThreatModel(
        releases="the clean sentence representations (or the text itself)",
        adversary="anyone who receives the release",
        query="the clean representation of the query",
        attacks=("search",),
        audit_attack="similarity search on the released representation",
    )
    known_leakage = "No privatization: whoever sees the training data or its representations sees everything."

    @property
    def variant(self) -> str:
        return "baseline"

    def guarantee(self, **context: Any) -> Guarantee:
        return Guarantee("none", "none (no privatization)")

    def release_hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> Any:
        """A release without privacy: the (m, k) = (0, 1) identity encoding, which writes the clean representations
        in the shared-file format (every scheme's release reads the same way)."""
        from ..mechanisms.texthide import TextHide

        return TextHide(0, 1, dim=dim, rng=rng)
