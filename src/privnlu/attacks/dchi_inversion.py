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

from ..mechanisms.dchi import TokenSpace, m_rep


@dataclass(frozen=True)
class NearestNeighbourInversion:
    """Grants: the public embedding table only."""

    public_table: TokenSpace

    def invert(self, noisy: torch.Tensor) -> torch.Tensor:
        """Guessed vocabulary ids for noisy embeddings (..., n)."""
        return self.public_table.nearest(noisy)


def inversion_accuracy(space: TokenSpace, token_ids: torch.Tensor, eta: float, rng, *, chunk: int = 8192) -> float:
    """Evaluator: privatize regular ``token_ids`` with M_rep, run the attack, return exact-recovery accuracy."""
    ids = token_ids[~space.special[token_ids]]
    attacker = NearestNeighbourInversion(space)
    hits = 0
    for s in range(0, len(ids), chunk):
        part = ids[s : s + chunk]
        noisy = m_rep(space, part, eta, rng)  # what the attacker receives
        hits += int((attacker.invert(noisy) == part).sum())
    return hits / max(1, len(ids))
