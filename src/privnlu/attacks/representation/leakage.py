"""The five leakage metrics of the TextHide paper (Huang et al. 2020, section 4.4, Table 3).

Each compares a retrieved sentence ``r`` with the true private sentence ``s``:

* **Identity**: ``1[r == s]`` (exact string match after stripping whitespace);
* **Jaccard**: ``|W(r) & W(s)| / |W(r) | W(s)|`` over lower-cased word sets
  (``W`` = scikit-learn's default word tokenizer), 1 when both are empty;
* **TF-IDF**: cosine of the TF-IDF vectors of ``r`` and ``s``, the vectorizer
  fitted on the attacker's corpus (``sklearn.feature_extraction.text.TfidfVectorizer``);
* **Label**: ``1[label(r) == label(s)]``;
* **SBERT**: cosine of sentence embeddings from the packaged all-MiniLM-L6-v2
  with mean pooling (the sentence-transformers recipe for that model).

Every per-pair function returns an array; :func:`leakage_scores` averages them
(x100 for the three rates, as the paper reports percentages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from ...errors import PrivnluError

METRICS = ("identity", "jaccard", "tfidf", "label", "sbert")


def identity(retrieved: Sequence[str], truth: Sequence[str]) -> np.ndarray:
    return np.array([a.strip() == b.strip() for a, b in zip(retrieved, truth, strict=True)], dtype=np.float64)


def _words() -> Callable[[str], list[str]]:
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(lowercase=True).build_analyzer()


def jaccard(retrieved: Sequence[str], truth: Sequence[str]) -> np.ndarray:
    analyze = _words()
    out = []
    for a, b in zip(retrieved, truth, strict=True):
        wa, wb = set(analyze(a)), set(analyze(b))
        out.append(1.0 if not wa and not wb else len(wa & wb) / len(wa | wb))
    return np.array(out, dtype=np.float64)


def tfidf_cosine(retrieved: Sequence[str], truth: Sequence[str], *, corpus: Sequence[str]) -> np.ndarray:
    """Row-wise cosine of TF-IDF vectors (l2-normalised by the vectorizer), fitted on ``corpus``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(lowercase=True).fit(corpus)
    a, b = vec.transform(retrieved), vec.transform(truth)
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def same_label(retrieved_labels: Sequence[int], true_labels: Sequence[int]) -> np.ndarray:
    return (np.asarray(retrieved_labels) == np.asarray(true_labels)).astype(np.float64)


def row_cosine(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=1).numpy()


def sbert_cosine(retrieved: Sequence[str], truth: Sequence[str], *, embed: Callable[[list[str]], torch.Tensor]) -> np.ndarray:
    """Cosine of ``embed(r)`` and ``embed(s)``; identical texts give exactly 1 (embedded once)."""
    uniq = sorted(set(retrieved) | set(truth))
    pos = {t: i for i, t in enumerate(uniq)}
    e = embed(uniq)
    ia = torch.tensor([pos[t] for t in retrieved])
    ib = torch.tensor([pos[t] for t in truth])
    return row_cosine(e[ia], e[ib])


def sbert_embedder(model: str | None = None, *, max_length: int = 128, batch_size: int = 64) -> Callable[[list[str]], torch.Tensor]:
    """MiniLM (or ``model``) with mean pooling: the SBERT embedding of all-MiniLM-L6-v2."""
    from ...models import extract_features, load_encoder

    enc = load_encoder(model, pooling="mean")

    def embed(texts: list[str]) -> torch.Tensor:
        return extract_features(enc, list(texts), max_length=max_length, batch_size=batch_size, progress=False)

    return embed


@dataclass(frozen=True)
class Pairs:
    """Retrieved vs true sentences (and labels) for one condition."""

    retrieved: list[str]
    truth: list[str]
    retrieved_labels: list[int] | None = None
    true_labels: list[int] | None = None

    def __post_init__(self) -> None:
        if len(self.retrieved) != len(self.truth):
            raise PrivnluError("leakage: retrieved and true sentences differ in number")


def leakage_scores(pairs: Pairs, *, corpus: Sequence[str], embed: Callable[[list[str]], torch.Tensor] | None) -> dict[str, float]:
    """Mean of each metric over the pairs (identity, label and jaccard x100; cosines in [-1, 1] x100 too)."""
    out = {
        "identity": 100 * identity(pairs.retrieved, pairs.truth).mean(),
        "jaccard": 100 * jaccard(pairs.retrieved, pairs.truth).mean(),
        "tfidf": 100 * tfidf_cosine(pairs.retrieved, pairs.truth, corpus=corpus).mean(),
    }
    if pairs.retrieved_labels is not None and pairs.true_labels is not None:
        out["label"] = 100 * same_label(pairs.retrieved_labels, pairs.true_labels).mean()
    if embed is not None:
        out["sbert"] = 100 * sbert_cosine(pairs.retrieved, pairs.truth, embed=embed).mean()
    return {k: round(float(v), 2) for k, v in out.items()}


def examples(retrieved: np.ndarray, truth, corpus_texts: Sequence[str], corpus_labels, query_texts: Sequence[str],
             query_labels, *, n: int = 3) -> list[dict]:
    """TextHide Tables 4 / 7: for the first ``n`` queries (by query number, so every condition shows the same
    ones), the query sentence and label and what the attack retrieved; then, if none of those retrieved its own
    sentence, the first query that did (``exact``), as the paper's Query1 shows for mix-only. ``retrieved[i]``
    is the corpus index answered for encoding ``i`` and ``truth[i]`` the query it encodes."""
    truth = [int(t) for t in truth]
    where = {q: i for i, q in reversed(list(enumerate(truth)))}  # first encoding of each query

    def row(q: int) -> dict:
        j = int(retrieved[where[q]])
        return {"query_number": q, "query": query_texts[q], "query_label": None if query_labels is None else int(query_labels[q]),
                "retrieved": corpus_texts[j], "retrieved_label": None if corpus_labels is None else int(corpus_labels[j]),
                "exact": corpus_texts[j].strip() == query_texts[q].strip()}

    order = sorted(where)
    out = [row(q) for q in order[:n]]
    if not any(r["exact"] for r in out):
        hit = next((r for r in (row(q) for q in order[n:]) if r["exact"]), None)
        if hit is not None:
            out.append(hit)
    return out
