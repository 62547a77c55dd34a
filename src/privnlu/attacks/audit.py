"""The auditor: plays the defender, hands the attacker only its view, and scores with the truth.

The functions here are the only place where a release's :class:`KeyRecord` and
the attack's output meet: the key gives the ground truth (which private example
each encoding belongs to), and it never enters an :class:`AttackerView`.

For each encoding of a mix, "its" private example is the first component
``pi_1(i) = i`` (TextHide, Algorithm 1): the example whose batch slot produced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from ..errors import PrivnluError
from ..mechanisms.release import SharedPayload, hide_dataset
from ..mechanisms.texthide import TextHide, check_k, m_label, parse_m
from ..rng import SecretGenerator
from .inversion import InversionConfig, RepresentationInversion
from .leakage import Pairs, examples, leakage_scores
from .search import SimilaritySearch
from .threat import INVERSION_THREAT, SEARCH_THREAT, AttackerView, Corpus


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


def score_reconstruction(recovered: torch.Tensor, clusters: list[torch.Tensor], member: torch.Tensor,
                         private_x: torch.Tensor) -> dict:
    """Success of a reconstruction, scored by the auditor with the release key.

    Group ``c``'s true original ``t(c)`` is the private example that most of its members contain. Original
    ``i`` is **reconstructed** when some group with ``t(c) = i`` recovers a vector whose nearest private
    original by cosine (between absolute values: the masks hide each coordinate's sign) is ``i``. The rate is
    the fraction of the ``n`` originals reconstructed; ``cosine_to_truth`` is the mean of
    ``cos(|x_hat_c|, |x_t(c)|)`` over groups. Chance is ``1/n`` per original.
    """
    n = private_x.shape[0]
    if not clusters:
        return {"success": 0.0, "cosine_to_truth": None, "purity": None, "groups": 0, "originals_found": 0}
    truth = torch.stack([member[c].sum(0).argmax() for c in clusters])
    purity = torch.stack([member[c][:, t].mean() for c, t in zip(clusters, truth)])
    xa = torch.nn.functional.normalize(private_x.abs().float(), dim=1)
    ra = torch.nn.functional.normalize(recovered.abs().float(), dim=1)
    cos = ra @ xa.T  # (groups, n)
    nearest = cos.argmax(1)
    ok = torch.zeros(n, dtype=torch.bool)
    ok[truth[nearest == truth]] = True
    return {"success": round(100.0 * float(ok.float().mean()), 2),
            "cosine_to_truth": round(float(cos[torch.arange(len(truth)), truth].mean()), 4),
            "purity": round(float(purity.mean()), 4), "groups": len(clusters),
            "originals_found": int(len(set(truth.tolist())))}


def reconstruction_audit(private_x: torch.Tensor, labels: torch.Tensor, cond: Condition, rng: SecretGenerator, *,
                         epochs: int, auxiliary: Corpus, candidates: Corpus | None = None, private_texts: list[str] | None = None,
                         config=None, methods: tuple[str, ...] | None = None, mechanism=None,
                         num_labels: int | None = None, distractors_x: torch.Tensor | None = None,
                         public: torch.Tensor | None = None, keep_guesses: bool = False, progress: bool = True,
                         noise: str = "per-encoding") -> dict:
    """Xie & Hong 2021 setting: release ``private_x`` ``epochs`` times under ``cond`` (one batch), attack, score.

    With ``mechanism`` (a :class:`~privnlu.mechanisms.dp.EncodingMechanism`) the release is DP instance
    encoding (Xie & Hong 2022): clipped, mixed, masked and noised (:class:`~privnlu.mechanisms.dp.DPTextHide`),
    with a fresh noise draw per encoding or (``noise="per-batch"``, Algorithm 1 as printed) one per batch, i.e.
    per pass here. The mechanism and the reading are public: the scheme grant states them, and the attacker is
    noise-aware by default (it simulates its training releases with the same noise; ``config.noise_aware=False``
    trains it on noise-free releases, as privnlu's attacker did first). The record states which attacker ran.
    Lenient / strict (with ``distractors_x``) / sentence success: :mod:`privnlu.attacks.reconstruction_metrics`.
    With ``public`` the release is TextHide-inter (public rows mixed in; the attack is unchanged). With
    ``keep_guesses`` each method also keeps, per group, the candidate it named and the group's true original.
    """
    import time as _time

    from .reconstruction import CLUSTERINGS, ReconstructionAttack, membership
    from .reconstruction_metrics import release_pair_accuracy, success_rates
    from .threat import RECONSTRUCTION_THREAT

    n = len(private_x)
    if mechanism is None:
        hider = TextHide(cond.m, cond.k, dim=private_x.shape[1], rng=rng, public=public)
    else:
        from ..mechanisms.dp import DPTextHide

        hider = DPTextHide(cond.m, cond.k, dim=private_x.shape[1], rng=rng, mechanism=mechanism, public=public,
                           noise=noise)
    payload, key = hide_dataset(hider, private_x, one_hot(labels, num_labels), epochs=epochs, batch_size=n)
    member = membership(key.partners, n, key.public)
    dp = {} if mechanism is None else {"dp": mechanism.to_json(), "dp_noise": noise}  # public: the mechanism, not its draws
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=payload.x, mixed_labels=payload.y,
                        scheme={"m": m_label(cond.m), "k": cond.k, "epochs": epochs, "dim": private_x.shape[1], **dp},
                        auxiliary=auxiliary, candidates=candidates)
    attack = ReconstructionAttack(config, methods or CLUSTERINGS, progress=progress)
    t0 = _time.perf_counter()
    results = attack.run(view)
    total = _time.perf_counter() - t0
    out = {**cond.to_json(), "dp": None if mechanism is None else mechanism.to_json(), "n_private": n, "epochs": epochs, "n_encodings": len(payload.x),
           "pair_train_accuracy": attack.pair_train_accuracy, "attack_seconds": round(total, 2), "methods": {},
           "pair_accuracy": {net: {**acc, "release": release_pair_accuracy(attack.scores[net], member, attack.graph_edges)}
                             for net, acc in attack.pair_accuracy.items()},
           "graph_neighbours": attack.config.graph or None,
           **({} if mechanism is None else {"dp_noise": noise, "attacker_noise_aware": attack.noise_aware,
                                             "attacker_noise_groups": attack.noise_groups}),
           "attacker_config": asdict(attack.config)}  # the attacker's own settings: the record says which attack ran
    for r in results:
        s = score_reconstruction(r.recovered, r.clusters, member, private_x)
        if r.sentence_index is not None and candidates is not None and private_texts is not None:
            truth = [int(member[c].sum(0).argmax()) for c in r.clusters]
            s["sentence_identity"] = round(100.0 * float(np.mean([candidates.texts[j].strip() == private_texts[t].strip()
                                                                  for j, t in zip(r.sentence_index, truth)])), 2)
            if keep_guesses:
                s["guesses"] = [int(j) for j in r.sentence_index]
                s["group_truth"] = truth
        s.update(success_rates(r.recovered, r.clusters, member, private_x, distractors_x=distractors_x,
                               sentence_index=r.sentence_index, candidate_texts=None if candidates is None else candidates.texts,
                               private_texts=private_texts))
        s["seconds"] = {k: round(v, 2) for k, v in r.seconds.items()}
        if r.repaired_groups is not None:
            s["repaired_groups"] = r.repaired_groups
        out["methods"][r.method] = s
    return out
