"""The auditor of the representation attacks (similarity search, inversion): plays the defender, hands the
attacker only its view, and scores with the truth.

The functions here are the only place where a release's :class:`KeyRecord` and
the attack's output meet: the key gives the ground truth (which private example
each encoding belongs to), and it never enters an :class:`AttackerView`.

For each encoding of a mix, "its" private example is the first component
``pi_1(i) = i`` (TextHide, Algorithm 1): the example whose batch slot produced it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ...errors import PrivnluError
from ...mechanisms.texthide import m_label
from ...rng import SecretGenerator
from ..conditions import Condition, release
from ..threat import INVERSION_THREAT, SEARCH_THREAT, AttackerView, Corpus
from .inversion import InversionConfig, RepresentationInversion
from .leakage import Pairs, examples, leakage_scores
from .search import SimilaritySearch


def _scores(retrieved: np.ndarray, truth: torch.Tensor, corpus: Corpus, truth_texts: list[str],
            truth_labels: torch.Tensor | None, embed) -> dict[str, float]:
    pairs = Pairs(
        retrieved=[corpus.texts[i] for i in retrieved],
        truth=[truth_texts[i] for i in truth.tolist()],
        retrieved_labels=None if corpus.labels is None else corpus.labels[torch.as_tensor(retrieved)].tolist(),
        true_labels=None if truth_labels is None else truth_labels[truth].tolist(),
    )
    return leakage_scores(pairs, corpus=corpus.texts, embed=embed)


def _random_guess(corpus: Corpus, texts_q: list[str], labels_q: torch.Tensor, embed, seed: int) -> dict[str, float]:
    """The random-guess condition: a uniformly random candidate per query (public, seeded; not a secret)."""
    guess = np.random.default_rng(seed).integers(0, len(corpus), size=len(texts_q))
    return _scores(guess, torch.arange(len(texts_q)), corpus, texts_q, labels_q, embed)


def search_audit(corpus: Corpus, query_idx: torch.Tensor, conditions: tuple[Condition, ...], rng: SecretGenerator, *,
                 embed: Callable | None, batch_size: int = 64, guess_seed: int = 0) -> dict[str, dict]:
    """Section 4.4: release the corpus rows ``query_idx`` under each condition and search the corpus with them."""
    if corpus.labels is None:
        raise PrivnluError("the search audit needs corpus labels (for the Label metric)")
    texts_q = [corpus.texts[i] for i in query_idx.tolist()]
    labels_q = corpus.labels[query_idx]
    out: dict[str, dict] = {}
    for cond in conditions:
        if cond.random:
            out[cond.name] = {**cond.to_json(), "metrics": _random_guess(corpus, texts_q, labels_q, embed, guess_seed)}
            continue
        payload, truth, _ = release(corpus.x[query_idx], labels_q, cond, rng, batch_size=batch_size,
                                    num_labels=int(corpus.labels.max()) + 1)  # classes of the whole corpus, not the sample
        view = AttackerView(SEARCH_THREAT, encodings=payload.x, scheme={"m": m_label(cond.m), "k": cond.k}, candidates=corpus)
        res = SimilaritySearch().run(view)
        out[cond.name] = {**cond.to_json(), "metrics": _scores(res.index, truth, corpus, texts_q, labels_q, embed),
                          "mean_cosine": round(float(res.cosine.mean()), 4),
                          "examples": examples(res.index, truth, corpus.texts, corpus.labels, texts_q, labels_q)}
    return out


def inversion_audit(train_x: torch.Tensor, train_labels: torch.Tensor, dev: Corpus, query_idx: torch.Tensor,
                    conditions: tuple[Condition, ...], rng: SecretGenerator, *, embed: Callable | None,
                    config: InversionConfig, batch_size: int = 64, guess_seed: int = 0) -> dict[str, dict]:
    """Appendix C.3: known pairs from the train split, queries from dev under the same key, candidates = dev."""
    if dev.labels is None:
        raise PrivnluError("the inversion audit needs dev labels (for the Label metric)")
    texts_q = [dev.texts[i] for i in query_idx.tolist()]
    labels_q = dev.labels[query_idx]
    n_classes = int(max(train_labels.max(), dev.labels.max())) + 1
    out: dict[str, dict] = {}
    for cond in conditions:
        if cond.random:
            out[cond.name] = {**cond.to_json(), "metrics": _random_guess(dev, texts_q, labels_q, embed, guess_seed)}
            continue
        known, known_truth, hider = release(train_x, train_labels, cond, rng, batch_size=batch_size, num_labels=n_classes)
        payload, truth, _ = release(dev.x[query_idx], labels_q, cond, rng, batch_size=batch_size, hider=hider, num_labels=n_classes)
        view = AttackerView(INVERSION_THREAT, encodings=payload.x, scheme={"m": m_label(cond.m), "k": cond.k},
                            candidates=dev, known_pairs=(train_x[known_truth], known.x))
        attack = RepresentationInversion(config)
        res, pred = attack.run(view)
        truth_x = dev.x[query_idx][truth]
        out[cond.name] = {**cond.to_json(),
                          "metrics": _scores(res.index, truth, dev, texts_q, labels_q, embed),
                          "examples": examples(res.index, truth, dev.texts, dev.labels, texts_q, labels_q),
                          "cosine_to_truth": round(float(torch.nn.functional.cosine_similarity(pred, truth_x).mean()), 4),
                          "train_loss": [round(v, 5) for v in attack.losses]}
    return out
