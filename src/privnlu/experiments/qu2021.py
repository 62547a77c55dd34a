"""Qu et al. 2021 (Privacy-Adaptive BERT), section 5: analyses that guide the choice of eta.

Each analysis returns a results record (``kind = "dchi"``, ``analysis = ...``)
for ``privnlu report``. Paper numbers quoted in the issue are kept beside ours;
the paper used bert-base (768-d) embeddings, the default here is MiniLM (384-d),
so the eta scales differ (see :func:`calibrate_eta`).
"""

from __future__ import annotations

import math
import time
from typing import Callable

import torch

from ..data import get_task
from ..errors import PrivnluError
from ..mechanisms.dchi import TokenSpace, check_eta, dchi_noise, m_txt
from ..mechanisms.dchi_stats import PAPER_KS, knn_distances, mean_noise_norm, plausible_deniability, token_ids_of
from ..attacks.dchi_inversion import inversion_accuracy
from ..rng import SecretGenerator

from ..paper_values import lookup
from ..paper_values.qu2021 import ETAS as PAPER_ETAS, SENTENCE as EXAMPLE_SENTENCE

# Table 3, nearest-neighbour inversion accuracy on bert-base embeddings (SST; QQP beside our MRPC)
PAPER_TABLE3 = {task: {e: lookup("qu2021", "Table 3", name, f"eta={e}").value for e in PAPER_ETAS}  # type: ignore[union-attr]
                for task, name in (("sst2", "SST"), ("qqp", "QQP"), ("mrpc", "QQP"))}  # MRPC stands in for QQP


def dataset_tokens(task: str, split: str = "dev", *, tokenizer, data_dir: str | None = None, limit: int | None = None) -> torch.Tensor:
    """All WordPiece ids of a task split (both sentences of a pair)."""
    ds = get_task(task).load(split, data_dir)
    texts = list(ds.texts_a) + (list(ds.texts_b) if ds.texts_b is not None else [])
    ids = token_ids_of(texts, tokenizer)
    return ids[:limit] if limit else ids


def geometry(space: TokenSpace, etas: tuple[float, ...], rng: SecretGenerator, *, sample: int | None = None) -> dict:
    """Figure 3: mean ||N|| against n/eta, and mean k-th nearest-neighbour distances in the table."""
    rows = None
    if sample is not None and sample < len(space.regular_ids):
        rows = rng.choice(len(space.regular_ids), sample)
    return {
        "kind": "dchi", "analysis": "geometry", "dim": space.dim,
        "noise": [{"eta": e, "mean_norm": mean_noise_norm(space.dim, e, rng), "n_over_eta": space.dim / e} for e in etas],
        "knn": knn_distances(space, PAPER_KS, rows=rows), "knn_rows": "all" if rows is None else int(sample or 0),
    }


def examples(space: TokenSpace, tokenizer, etas: tuple[float, ...], rng: SecretGenerator, *, sentence: str = EXAMPLE_SENTENCE,
             top_eta: float = 100.0, draws: int = 1000, top: int = 10) -> dict:
    """Tables 1-2 on the paper's sentence: one M_txt draw per eta; over ``draws`` at ``top_eta``, each token's
    most frequent outputs, how often it is unchanged (N_w) and its number of distinct outputs (S_w, the paper's
    "825 distinct words" for "emotions")."""
    ids = torch.tensor(tokenizer(sentence, add_special_tokens=False)["input_ids"])
    rows = [{"eta": e, "text": tokenizer.decode(m_txt(space, ids, e, rng).tolist())} for e in etas]
    many = m_txt(space, ids.repeat(draws, 1), top_eta, rng)
    tops = []
    for i, w in enumerate(ids.tolist()):
        vals, counts = many[:, i].unique(return_counts=True)
        order = counts.argsort(descending=True)[:top]
        tops.append({"token": tokenizer.convert_ids_to_tokens(w),
                     "outputs": [[tokenizer.convert_ids_to_tokens(int(vals[o])), int(counts[o])] for o in order],
                     "unchanged": int(counts[vals == w].sum()), "distinct": int(len(vals))})
    return {"kind": "dchi", "analysis": "examples", "sentence": sentence, "privatized": rows, "top_eta": top_eta,
            "draws": draws, "top_outputs": tops}


def deniability(space: TokenSpace, eta: float, rng: SecretGenerator, *, draws: int = 1000, sample: int | None = None) -> dict:
    """Figure 4: N_w and S_w for every regular token (or a uniform sample of ``sample`` tokens)."""
    rows = None if sample is None or sample >= len(space.regular_ids) else rng.choice(len(space.regular_ids), sample).sort().values
    d = plausible_deniability(space, eta, rng, draws=draws, rows=rows)
    return {"kind": "dchi", "analysis": "deniability", "eta": eta, "draws": draws, "words": len(d.word_ids), "dim": space.dim,
            "word_ids": d.word_ids.tolist(), "n_w": d.n_w.tolist(), "s_w": d.s_w.tolist(), "certified": d.certified,
            "stage2": d.stage2, "brute": d.brute, "seconds": d.seconds}


def inversion(space: TokenSpace, tokens: torch.Tensor, etas: tuple[float, ...], rng: SecretGenerator, *, task: str) -> dict:
    """Table 3: nearest-neighbour inversion accuracy on M_rep output for each eta."""
    rows = [{"eta": e, "accuracy": inversion_accuracy(space, tokens, e, rng), "paper": PAPER_TABLE3.get(task, {}).get(e)} for e in etas]
    return {"kind": "dchi", "analysis": "inversion", "task": task, "dim": space.dim,
            "tokens": int((~space.special[tokens]).sum()), "rows": rows}


def bisect_eta(f: Callable[[float], float], target: float, *, lo: float, hi: float, iters: int = 30) -> float:
    """The eta in [lo, hi] (log scale) where the increasing function ``f`` crosses ``target``."""
    flo, fhi = f(lo), f(hi)
    if not flo <= target <= fhi:
        raise PrivnluError(f"the target {target} is outside [{flo:.4g}, {fhi:.4g}] reached for eta in [{lo:g}, {hi:g}]; widen --eta-range")
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1.001:
            break
    return math.sqrt(lo * hi)


def calibrate_eta(space: TokenSpace, tokens: torch.Tensor, target: float, rng: SecretGenerator, *,
                  eta_range: tuple[float, float] = (1.0, 1e5)) -> dict:
    """The eta at which nearest-neighbour inversion of ``tokens`` succeeds with probability ``target``.

    Uses common random numbers: one set of directions and radius uniforms is
    drawn once and the radius is rescaled as eta changes (``r = P^-1(n, U)/eta``),
    so the estimated accuracy is a monotone-in-practice function of eta and
    bisection is well posed. ``target`` may also be read as an N_w bound:
    with ``tokens`` a uniform sample of the vocabulary, the accuracy is the mean
    of ``N_w / draws``.
    """
    if not 0 < target < 1:
        raise PrivnluError(f"the target accuracy must be in (0, 1), not {target}")
    ids = tokens[~space.special[tokens]]
    if len(ids) == 0:
        raise PrivnluError("no regular tokens to calibrate on")
    base = dchi_noise(len(ids), space.dim, 1.0, rng)  # eta = 1; eta scales the radius as 1/eta
    clean = space.embeddings[ids]
    cache: dict[float, float] = {}

    def acc(eta: float) -> float:
        if eta not in cache:
            cache[eta] = float((space.nearest(clean + base / eta) == ids).float().mean())
        return cache[eta]

    t0 = time.perf_counter()
    eta = bisect_eta(acc, target, lo=eta_range[0], hi=eta_range[1])
    return {"kind": "dchi", "analysis": "calibration", "target_accuracy": target, "eta": eta, "accuracy_at_eta": acc(eta),
            "tokens": len(ids), "dim": space.dim, "mean_noise_norm": space.dim / eta, "seconds": time.perf_counter() - t0}


def check_etas(etas: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(check_eta(e) for e in etas)


# -- Tables 4-5: privacy-constrained fine-tuning, as the paper ran it (section 6.1) ---------------------------

#: the paper's learning rates: BERT 2e-5 on SST, 4e-5 on QQP (MRPC stands in for QQP here); BiLSTM 1e-3 on both
PAPER_LR = {"sst2": 2e-5, "qqp": 4e-5, "mrpc": 4e-5}
PAPER_LSTM_LR = 1e-3
#: section 6.1: max length 128, batch 32, 3 epochs, 10% warm-up, for both encoders (equal budgets)
PAPER_FINETUNE = {"max_length": 128, "batch_size": 32, "epochs": 3, "warmup_ratio": 0.1}
MIN_SST2_TRAIN = 10_000


def paper_lr(task: str) -> float:
    """The transformer learning rate the paper used for this task (2e-5 where it names none: its SST value)."""
    return PAPER_LR.get(task, PAPER_LR["sst2"])


def budget(train_size: int, batch_size: int, epochs: int) -> dict:
    """The training budget of one run: optimizer steps and examples seen (equal for both encoders in the recipe)."""
    steps = math.ceil(train_size / batch_size) * epochs
    return {"optimizer_steps": steps, "examples_seen": train_size * epochs}


def paired_t_test(a: list[float], b: list[float]) -> dict:
    """Student's paired t-test of ``a - b`` (the paper's test for its Delta marks; here paired by seed: one seed
    fixes the privatized data, order, initialisation and dropout of both runs). Two-sided p; n >= 2."""
    if len(a) != len(b) or len(a) < 2:
        raise PrivnluError("a paired t-test needs two equally long lists of at least 2 runs")
    from scipy import stats

    diff = [x - y for x, y in zip(a, b)]
    mean = sum(diff) / len(diff)
    if all(d == diff[0] for d in diff):  # zero variance: t undefined
        return {"n": len(diff), "mean_diff": mean, "t": None, "p": 0.0 if mean != 0 else 1.0}
    res = stats.ttest_rel(a, b)
    return {"n": len(diff), "mean_diff": mean, "t": float(res.statistic), "p": float(res.pvalue)}


def table45(records: list[dict]) -> list[dict]:
    """Tables 4-5 from fine-tuning records (kind ``dchi_finetune``) of several seeds: per (task, tag, encoder,
    mode, eta) the mean accuracy over seeds, and the paper's paired comparisons with their p-values:
    text vs token (same encoder; the paper's Delta 1 / Delta 3) and transformer vs BiLSTM (same mode)."""
    from collections import defaultdict

    by: dict[tuple, dict[int, float]] = defaultdict(dict)
    floor: dict[str, float] = {}  # task -> the dev accuracy of the majority class (records since session 10)
    for r in records:
        if r.get("kind") != "dchi_finetune" or r.get("seed") is None:
            continue
        acc = r["metrics"].get("accuracy", r["score"])
        by[(r["task"], r.get("tag") or "", r["encoder"], r["mode"], r["eta"])][int(r["seed"])] = float(acc)
        if (r.get("majority") or {}).get("accuracy") is not None:
            floor[r["task"]] = r["majority"]["accuracy"] / 100
    rows = []
    for (task, tag, enc, mode, eta), seeds in sorted(by.items(), key=lambda kv: (kv[0][:4], kv[0][4] or 0.0)):
        row = {"task": task, "tag": tag, "encoder": enc, "mode": mode, "eta": eta, "seeds": sorted(seeds),
               "mean": sum(seeds.values()) / len(seeds), "majority": floor.get(task)}
        other_enc = "bilstm" if enc == "transformer" else "transformer"
        for name, other in (("vs_token", (task, tag, enc, "token", eta)),
                            ("vs_other_encoder", (task, tag, other_enc, mode, eta))):
            if other == (task, tag, enc, mode, eta) or other not in by:
                continue
            common = sorted(set(seeds) & set(by[other]))
            if len(common) >= 2:
                row[name] = paired_t_test([seeds[s] for s in common], [by[other][s] for s in common])
        # "BERT is less robust than BiLSTM": each encoder's drop from its own Null Privacy run, paired by seed
        mine = _drops(by, (task, tag, enc, mode, eta))
        theirs = _drops(by, (task, tag, other_enc, mode, eta))
        common = sorted(set(mine) & set(theirs))
        if mode != "null" and len(common) >= 2:
            row["drop_vs_other_encoder"] = paired_t_test([mine[s] for s in common], [theirs[s] for s in common])
        rows.append(row)
    return rows


def _drops(by: dict, key: tuple) -> dict[int, float]:
    """Per seed, the Null-privacy accuracy of the same (task, tag, encoder) minus this run's: the cost of privacy."""
    task, tag, enc, _, _ = key
    null, runs = by.get((task, tag, enc, "null", None), {}), by.get(key, {})
    return {s: null[s] - runs[s] for s in set(null) & set(runs)}


# -- section 6.2: sequence-representation privatization ("a 30% absolute decrease even at eta = 175") -------------

def with_cached_features(prep, cache_dir: str | None = None, data_dir: str | None = None):
    """``prep`` with the user-side [CLS] representations of both splits taken from the feature cache (the same
    encoder, pooling and max length as ``privnlu train``), instead of encoding them again."""
    from dataclasses import replace

    from ..models import FeatureCache

    cache = FeatureCache(cache_dir)
    out = {}
    for name, split in (("train", prep.train), ("dev", prep.dev)):
        ds = prep.task.load("train" if name == "train" else prep.task.eval_splits[0], data_dir).head(len(split.labels))
        feats = cache.get(prep.encoder, ds, max_length=prep.max_length, progress=False).features
        out[name] = replace(split, features=feats)
    return replace(prep, train=out["train"], dev=out["dev"])


def sequence_rep(prep, etas: tuple[float, ...], seeds: tuple[int, ...], *, epochs: int = 3, log=None) -> dict:
    """Sequence-representation privatization (M_seq on the frozen encoder's [CLS] vector; the provider trains
    the head only) at each eta, and the same frozen head on clean vectors (``eta = None``), per seed.

    Separates the paper's "30-point drop against Null Privacy" into what freezing the encoder costs (clean
    frozen head vs the fine-tuned null model, which the caller supplies) and what the noise costs (privatized
    vs clean frozen head). Also reports E||N|| = n / eta against the mean norm of the representations."""
    from ..rng import SecretGenerator
    from ..training import private_finetune as pf

    rows = []
    for seed in seeds:
        for eta in (None, *etas):
            rng = SecretGenerator(seed, warn=False)
            if eta is None:  # the frozen head on clean vectors: null privacy, encoder frozen (the label 1e9 is unused)
                cfg = pf.FinetuneConfig(mode="sequence", eta=1e9, epochs=epochs, seed=seed)
                payloads = (list(prep.train.features), list(prep.dev.features))
            else:
                cfg = pf.FinetuneConfig(mode="sequence", eta=eta, epochs=epochs, seed=seed)
                payloads = pf.privatize(prep, "sequence", eta, rng)
            rec = pf.finetune(prep, cfg, payloads=payloads, log=log).record
            rows.append({"eta": eta, "seed": seed, "accuracy": rec["metrics"]["accuracy"], "score": rec["score"]})
    norms = prep.dev.features.norm(dim=1)
    return {"kind": "dchi", "analysis": "sequence_rep", "task": prep.task.name, "dim": int(prep.dev.features.shape[1]),
            "train_size": len(prep.train.labels), "dev_size": len(prep.dev.labels), "epochs": epochs,
            "rep_norm_mean": float(norms.mean()), "rep_norm_sd": float(norms.std()),
            "noise_norm": {str(e): prep.dev.features.shape[1] / e for e in etas}, "rows": rows}

