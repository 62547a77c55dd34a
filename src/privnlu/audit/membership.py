"""The model-release threat in the audit: membership inference on the model each point trains.

Candidates: the audit's ``n`` private training sentences (members) first, then up to ``D`` labelled non-members
of the same distribution (training-split rows past ``--train-limit``, then the first evaluation split; never a
text the model was trained on). The attacker gets what :data:`~privnlu.attacks.membership.inference.MEMBERSHIP_THREAT`
grants: query access to the trained model (its logits for any input, through the scheme's own query path), the
public training recipe, and the candidates. Both modes run online LiRA (Carlini et al. 2022) with
``--mi-references`` reference models trained by that recipe on random halves of the candidates: in frozen mode a head
on the candidates' representations, in joint mode a fine-tuning run of the encoder and head on their texts (the
candidates then reach the attack as row numbers, which the recipe and the query turn into texts). Each reference
model draws its own keys and noise (a seed of its own when the audit is seeded), never the owner's.

Reported: ROC AUC, TPR at 0.1 % and 1 % FPR, the re-identification share (the attacker names its ``n``
highest-scoring candidates; random naming hits ``n / (n + D)``) on the audit's common scale, and the empirical
epsilon of the ranking (:mod:`.leakage`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import torch

from ..attacks.membership.inference import LiRA, membership_metrics, top_n_reidentification
from ..attacks.threat import MEMBERSHIP_THREAT, AttackerView, Corpus
from ..data import TextDataset
from ..models import FeatureCache, extract_features
from ..training.engine import Prepared, RunSpec, train_run
from .leakage import on_scale, ranking_epsilon

#: the audit's shared context (:class:`privnlu.audit.run.Context`, not imported: run imports this module)
Context = Any
Query = Callable[[torch.Tensor], torch.Tensor]


def nonmember_pool(ctx: Context) -> Corpus:
    """Up to ``distractors`` labelled sentences the audited model never trained on (see the module docstring)."""
    from ..data import get_task

    s, prep = ctx.settings, ctx.prep
    first = prep.task.eval_splits[0]
    sources: list[tuple[TextDataset, torch.Tensor | None]] = []  # (sentences, their representations if computed)
    if s.train_limit is not None:
        full = get_task(s.task).load("train", s.data_dir)
        sources.append((full.subset(range(s.train_limit, min(len(full), s.train_limit + 2 * s.distractors))), None))
    sources.append((prep.evals[first], prep.eval_x[first]))
    seen = set(prep.train.texts_a)
    texts: list[str] = []
    xs: list[torch.Tensor] = []
    labels: list[int] = []
    for ds, x in sources:
        keep = []
        for i, t in enumerate(ds.texts_a):
            if len(texts) + len(keep) >= s.distractors:
                break
            if t not in seen:
                seen.add(t)
                keep.append(i)
        if keep:
            part = ds.subset(keep)
            texts += part.texts_a
            labels += [int(y) for y in part.labels]
            xs.append(x[keep] if x is not None else _encode(ctx, part))
    return Corpus(texts, torch.cat(xs).float(), torch.tensor(labels, dtype=torch.long))


def _encode(ctx: Context, ds: TextDataset) -> torch.Tensor:
    """``ds``'s representations under the audit's encoder (through the feature cache)."""
    spec = ctx.base
    return FeatureCache(spec.cache_dir).get(ctx.prep.encoder, ds, max_length=spec.max_length,
                                            batch_size=spec.encode_batch_size, bf16=spec.bf16,
                                            progress=ctx.progress).features


def candidates(ctx: Context) -> Corpus:
    """Members (the private sentences, clean representations) first, then the non-member pool."""
    prep = ctx.prep
    assert prep.train_x is not None
    pool = ctx.nonmembers
    labels = torch.tensor(prep.train.labels, dtype=torch.long)[ctx.private]
    return Corpus([prep.train.texts_a[i] for i in ctx.private.tolist()] + pool.texts,
                  torch.cat([prep.train_x[ctx.private].float(), pool.x]),
                  torch.cat([labels, pool.labels]))


def reference_seed(seed: int | None, r: int) -> int | None:
    """The seed of the attacker's ``r``-th reference model: never the audited model's own (which would hand the
    attacker the owner's keys and noise); ``None`` (OS randomness) when the audit is not seeded."""
    return None if seed is None else (seed + 7919 * (r + 1)) % 2**31


def reference_trainer(ctx: Context, spec: RunSpec, texts: list[str] | None = None
                      ) -> Callable[[torch.Tensor, torch.Tensor], Query]:
    """The public training recipe, run by the attacker: a model trained like the audited one (``spec``: same mode
    and settings, the attacker's own keys and noise) on candidates ``x`` with ``labels``; its query function.

    Frozen mode: ``x`` are representations, and a head is trained on them. Joint mode: ``x`` are row numbers into
    the candidates' ``texts``, and the encoder is fine-tuned with the head on those texts."""
    prep = ctx.prep
    first = prep.task.eval_splits[0]
    evals = {first: prep.evals[first].head(64)}  # per-epoch evaluation only; the attacker never needs it
    spec = replace(spec, scheme=spec.scheme.head_scheme())  # a scheme released once: a head on clean representations
    calls = [0]

    def train(x: torch.Tensor, labels: torch.Tensor) -> Query:
        run = replace(spec, train=replace(spec.train, seed=reference_seed(spec.train.seed, calls[0])))
        calls[0] += 1
        keep: dict = {}
        if spec.mode == "joint":
            assert texts is not None
            rows = [texts[int(i)] for i in x.flatten().tolist()]
            ds = TextDataset(prep.train.name, "train", rows, [int(y) for y in labels], label_names=prep.train.label_names)
            ref = Prepared(prep.task, prep.encoder, ds, evals, None, {}, None, ctx.public_texts if spec.inter else None)
            train_run(run, ref, progress=False, group="reference", keep=keep)
            return joint_query(ctx, keep, texts)
        # frozen training reads representations and labels only; the texts stay with the attacker
        ds = TextDataset(prep.train.name, "train", [""] * len(x), [int(y) for y in labels],
                         label_names=prep.train.label_names)
        ref = Prepared(prep.task, prep.encoder, ds, evals, x, {first: prep.eval_x[first][:64]}, prep.public_x, None)
        train_run(replace(run, mode="frozen"), ref, progress=False, group="reference", keep=keep)
        return keep["query"]

    return train


def joint_query(ctx: Context, keep: dict, texts: list[str]) -> Query:
    """A fine-tuned model's query on row numbers into ``texts``: its own encoder on those texts, then its head."""
    def query(rows: torch.Tensor) -> torch.Tensor:
        batch = [texts[int(i)] for i in rows.flatten().tolist()]
        x = extract_features(keep["encoder"], batch, None, max_length=ctx.settings.max_length, progress=False)
        return keep["query"](x.float())

    return query


def membership_threat(ctx: Context, spec: RunSpec, keep: dict, delta: float) -> dict:
    """Membership inference on the model the point trained under ``spec``; the threat's record (see the module
    docstring). ``delta``: the empirical epsilon's."""
    s = ctx.settings
    pool = candidates(ctx)
    n = ctx.n
    query, texts = keep["query"], None
    if s.mode == "joint":  # candidates as row numbers: every model represents them with its own encoder
        texts = pool.texts
        pool = Corpus(texts, torch.arange(len(texts), dtype=torch.float32)[:, None], pool.labels)
        query = joint_query(ctx, keep, texts)
    view = AttackerView(MEMBERSHIP_THREAT, candidates=pool, query=query,
                        train_reference=reference_trainer(ctx, spec, texts))
    attack = LiRA(n_reference=s.mi_references, rng=ctx.rng())
    name = (f"LiRA, online, {s.mi_references} reference models (Carlini et al. 2022)"
            + (", each fine-tuned by the point's recipe" if s.mode == "joint" else ""))
    scores = attack.run(view)
    member = torch.zeros(len(pool), dtype=torch.bool)
    member[:n] = True
    reid = top_n_reidentification(scores, n)
    metrics = membership_metrics(scores, member)
    ci = [round(v, 2) for v in reid["ci95"]]
    return {"threat": "model", "attack": name, "auc": round(metrics["auc"], 4),
            "tpr_at_fpr": {"0.01": metrics["tpr_at_fpr_0.01"], "0.001": metrics["tpr_at_fpr_0.001"]},
            "balanced_accuracy": round(metrics["balanced_accuracy"], 4), "rate": round(reid["rate"], 2),
            "identified": reid["identified"], "n_private": n, "ci95": ci,
            "random_guess": round(reid["random_guess"], 3), **on_scale(reid["rate"], ci, reid["random_guess"]),
            "candidates": len(pool), "distractors": len(pool) - n,
            "n_members": metrics["n_members"], "n_nonmembers": metrics["n_nonmembers"],
            "empirical_epsilon": ranking_epsilon(scores, member, delta)}
