"""Representation-based similarity search (Huang et al. 2020, section 4.4).

The attacker indexes a corpus of (sentence, h(sentence)) pairs with FAISS and
answers each privatized representation ``q`` with

    argmax_i cos(q, h(s_i)) = argmax_i <q/|q|, h(s_i)/|h(s_i)|>,

an exact inner-product search (``faiss.IndexFlatIP``) over L2-normalised vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...errors import PrivnluError
from ..threat import Attack, AttackerView, Corpus, Grant


class CosineIndex:
    """Exact cosine nearest-neighbour search with FAISS (inner product on unit vectors)."""

    def __init__(self, x: torch.Tensor) -> None:
        import faiss

        if x.ndim != 2 or len(x) == 0:
            raise PrivnluError("the search corpus must be a non-empty (N, d) matrix")
        self.dim = int(x.shape[1])
        self.index = faiss.IndexFlatIP(self.dim)
        self.index.add(_unit(x))

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, q: torch.Tensor, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, indices), each (len(q), k), best first."""
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise PrivnluError(f"attack data have mismatched dimensions: queries are {tuple(q.shape)}, the index is {self.dim}-d")
        sims, idx = self.index.search(_unit(q), k)
        return sims, idx


def _unit(x: torch.Tensor) -> np.ndarray:
    x = torch.as_tensor(x, dtype=torch.float32)
    return np.ascontiguousarray(torch.nn.functional.normalize(x, dim=1).numpy())


@dataclass(frozen=True)
class SearchResult:
    """For each query: the index of the retrieved corpus sentence and its cosine."""

    index: np.ndarray
    cosine: np.ndarray


class SimilaritySearch(Attack):
    """Query a FAISS index of the candidate corpus with each released encoding."""

    name = "search"
    requires = frozenset({Grant.ENCODINGS, Grant.CANDIDATES})

    def run(self, view: AttackerView, queries: torch.Tensor | None = None) -> SearchResult:
        """Search with ``queries`` (default: the released encodings themselves)."""
        self.check(view)
        corpus: Corpus = view.need("candidates")
        q = view.need("encodings") if queries is None else queries
        sims, idx = CosineIndex(corpus.x).search(q, 1)
        return SearchResult(idx[:, 0], sims[:, 0])
