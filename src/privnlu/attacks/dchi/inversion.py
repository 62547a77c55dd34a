"""Token embedding inversion against M_rep (Qu et al. 2021, section 5, Table 3).

Threat model: the attacker (e.g. the service provider) receives the noisy token
embeddings ``phi(x_i) + N_i`` that the user sends, and knows the public
embedding table ``phi`` (the model is public). It holds no noise, no seed and no
clean token. It guesses each token as the nearest regular vocabulary token,
``argmin_v ||phi(v) - y_i||``; special tokens are never privatized, so it only
needs to search regular ones. Accuracy is the fraction of privatized tokens
recovered exactly. The evaluator, not the attacker, holds the true tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...mechanisms.dchi import TokenSpace
from ...mechanisms.dchi_stats import unchanged_share
from ..threat import Attack, AttackerView, Grant


@dataclass(frozen=True)
class NearestNeighbourInversion(Attack):
    """Grants: the noisy token embeddings and the public embedding table only."""

    name = "token-inversion"
    requires = frozenset({Grant.ENCODINGS, Grant.ENCODER})

    public_table: TokenSpace

    def invert(self, noisy: torch.Tensor) -> torch.Tensor:
        """Guessed vocabulary ids for noisy embeddings (..., n)."""
        return self.public_table.nearest(noisy)

    def run(self, view: AttackerView) -> torch.Tensor:
        """Guessed vocabulary ids for the view's noisy token embeddings (N, n)."""
        self.check(view)
        return self.invert(view.need("encodings"))


def inversion_accuracy(space: TokenSpace, token_ids: torch.Tensor, eta: float, rng, *, chunk: int = 8192) -> float:
    """Evaluator: privatize regular ``token_ids`` with M_rep, guess each as the nearest regular token (the attack
    above, which holds only the public table), return the exact-recovery accuracy; that is the share of tokens
    M_txt leaves unchanged (:func:`privnlu.mechanisms.dchi_stats.unchanged_share`)."""
    return unchanged_share(space, token_ids, eta, rng, chunk=chunk)
