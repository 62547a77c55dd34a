"""d_chi analyses that guide the choice of eta (Qu et al. 2021, section 5): geometry (Figure 3), the paper's
example sentence (Tables 1-2), plausible deniability (Figure 4), token-embedding inversion (Table 3) and the eta
that a target inversion accuracy calls for.

Each analysis returns a results record (``kind = "dchi"``, ``analysis = ...``) for ``privnlu report``. The paper
used bert-base (768-d) embeddings, the default here is MiniLM (384-d), so the eta scales differ
(see :func:`calibrate_eta`).
"""

from __future__ import annotations

import math
import time
from typing import Callable

import torch
from tqdm.auto import tqdm

from ...data import get_task
from ...errors import PrivnluError
from ...mechanisms.dchi import TokenSpace, check_eta, dchi_noise, m_txt
from ...mechanisms.dchi_stats import PAPER_KS, knn_distances, mean_noise_norm, plausible_deniability, token_ids_of
from ...paper_values import lookup
from ...paper_values.qu2021 import ETAS as PAPER_ETAS, SENTENCE as EXAMPLE_SENTENCE
from ...rng import SecretGenerator
from .inversion import inversion_accuracy

# Table 3, nearest-neighbour inversion accuracy on bert-base embeddings (SST; QQP beside our MRPC)
PAPER_TABLE3 = {task: {e: lookup("qu2021", "Table 3", name, f"eta={e}").value for e in PAPER_ETAS}  # type: ignore[union-attr]
                for task, name in (("sst2", "SST"), ("qqp", "QQP"), ("mrpc", "QQP"))}  # MRPC stands in for QQP


def check_etas(etas: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(check_eta(e) for e in etas)


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


def deniability(space: TokenSpace, eta: float, rng: SecretGenerator, *, draws: int = 1000, sample: int | None = None,
                chunk: int = 1024) -> dict:
    """Figure 4: N_w and S_w for every regular token (or a uniform sample of ``sample`` tokens), ``chunk`` words at
    a time with a progress bar (the noise bank is drawn per chunk, as :func:`plausible_deniability` draws it)."""
    v = len(space.regular_ids)
    rows = torch.arange(v) if sample is None or sample >= v else rng.choice(v, sample).sort().values
    parts = []
    with tqdm(total=len(rows), desc=f"deniability eta={eta:g}", unit="word", leave=False) as bar:
        for s in range(0, len(rows), chunk):
            parts.append(plausible_deniability(space, eta, rng, draws=draws, rows=rows[s: s + chunk], word_chunk=chunk))
            bar.update(len(rows[s: s + chunk]))
    weights = [len(d.word_ids) / max(1, len(rows)) for d in parts]
    return {"kind": "dchi", "analysis": "deniability", "eta": eta, "draws": draws, "words": len(rows), "dim": space.dim,
            "word_ids": torch.cat([d.word_ids for d in parts]).tolist(), "n_w": torch.cat([d.n_w for d in parts]).tolist(),
            "s_w": torch.cat([d.s_w for d in parts]).tolist(),
            **{k: sum(w * getattr(d, k) for w, d in zip(weights, parts)) for k in ("certified", "stage2", "brute")},
            "seconds": sum(d.seconds for d in parts)}


def inversion(space: TokenSpace, tokens: torch.Tensor, etas: tuple[float, ...], rng: SecretGenerator, *, task: str) -> dict:
    """Table 3: nearest-neighbour inversion accuracy on M_rep output for each eta."""
    rows = [{"eta": e, "accuracy": inversion_accuracy(space, tokens, e, rng), "paper": PAPER_TABLE3.get(task, {}).get(e)}
            for e in tqdm(etas, desc=f"inversion of {len(tokens)} tokens", unit="eta", leave=False)]
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
                  eta_range: tuple[float, float] = (1.0, 1e5), progress: bool = True) -> dict:
    """The eta at which nearest-neighbour inversion of ``tokens`` succeeds with probability ``target``
    (``progress``: a bar per bisection step).

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

    bar = tqdm(desc=f"calibrating eta on {len(ids)} tokens", unit="step", leave=False, disable=not progress)

    def acc(eta: float) -> float:
        if eta not in cache:
            cache[eta] = float((space.nearest(clean + base / eta) == ids).float().mean())
            bar.update()
            bar.set_postfix_str(f"eta {eta:.4g}: accuracy {cache[eta]:.3f}")
        return cache[eta]

    t0 = time.perf_counter()
    with bar:
        eta = bisect_eta(acc, target, lo=eta_range[0], hi=eta_range[1])
    return {"kind": "dchi", "analysis": "calibration", "target_accuracy": target, "eta": eta, "accuracy_at_eta": acc(eta),
            "tokens": len(ids), "dim": space.dim, "mean_noise_norm": space.dim / eta, "seconds": time.perf_counter() - t0}


# -- the analyses as runs (``privnlu dchi calibrate``, ``privnlu dchi analyze``) ----------------------------------

ANALYSES = ("geometry", "examples", "deniability", "inversion")
#: the tokens ``privnlu dchi analyze deniability`` samples unless told (every regular token of MiniLM: ~30 min)
DENIABILITY_SAMPLE = 2000


def calibrate(target: float, *, tokens: str = "vocab", split: str = "dev", max_tokens: int = 3000,
              eta_range: tuple[float, float] = (1.0, 1e5), model: str | None = None, data_dir: str | None = None,
              seed: int | None = None) -> dict:
    """The eta at which nearest-neighbour inversion recovers ``target`` of the tokens: of a task split
    (``tokens`` = a task name), or of a uniform vocabulary sample (``vocab``; then ``target`` bounds the mean
    N_w / draws). Returns the record (kind ``dchi``, analysis ``calibration``)."""
    from ...mechanisms.dchi import load_token_space

    if not 0 < target < 1:
        raise PrivnluError(f"--target must be in (0, 1), not {target}")
    if len(eta_range) != 2 or not eta_range[0] < eta_range[1]:
        raise PrivnluError("--eta-range must be two increasing positive numbers, e.g. 1,100000")
    rng = SecretGenerator(seed, warn=False)
    space, tok = load_token_space(model)
    if tokens == "vocab":
        ids = space.regular_ids[rng.choice(len(space.regular_ids), min(max_tokens, len(space.regular_ids)))]
    else:
        ids = dataset_tokens(tokens, split, tokenizer=tok, data_dir=data_dir, limit=max_tokens)
    rec = calibrate_eta(space, ids, target, rng, eta_range=(float(eta_range[0]), float(eta_range[1])))
    rec.update(model=model or "packaged MiniLM", tokens_from=tokens)
    return rec


def analyze(analysis: str, *, etas: tuple[float, ...] = PAPER_ETAS, eta: float = 100.0, task: str = "sst2",
            max_tokens: int | None = None, sample: int | None = None, draws: int = 1000, model: str | None = None,
            data_dir: str | None = None, seed: int | None = None) -> dict:
    """One analysis of Qu et al. 2021 section 5 (see :data:`ANALYSES`); returns its record (kind ``dchi``)."""
    from ...errors import require_choice
    from ...mechanisms.dchi import load_token_space

    require_choice("analysis", analysis, ANALYSES)
    check_etas((eta,))
    rng = SecretGenerator(seed, warn=False)
    space, tok = load_token_space(model)
    if analysis == "geometry":
        rec = geometry(space, etas, rng, sample=sample)
    elif analysis == "examples":
        rec = examples(space, tok, etas, rng, top_eta=eta, draws=draws)
    elif analysis == "deniability":
        rec = deniability(space, eta, rng, draws=draws, sample=sample)
    else:
        rec = inversion(space, dataset_tokens(task, "dev", tokenizer=tok, data_dir=data_dir, limit=max_tokens), etas,
                        rng, task=task)
    rec["model"] = model or "packaged MiniLM"
    return rec


def headline(rec: dict) -> list[str]:
    """What an analysis or calibration record found, in a few lines (``privnlu dchi analyze`` prints them)."""
    a = rec.get("analysis")
    if a == "geometry":
        knn = rec.get("knn", {})
        return ["mean noise norm ||N|| by eta: " + ", ".join(f"{r['eta']:g}: {r['mean_norm']:.3g}" for r in rec["noise"]),
                "mean distance to the k-th nearest token: " + ", ".join(f"k={k}: {v:.3g}" for k, v in
                                                                          list(knn.items())[:6])]
    if a == "examples":
        return [f"eta {r['eta']:g}: {r['text']}" for r in rec["privatized"]] + [
            f"at eta {rec['top_eta']:g}, over {rec['draws']} draws: " + ", ".join(
                f"{t['token']} kept {t['unchanged']}x ({t['distinct']} distinct)" for t in rec["top_outputs"][:6])]
    if a == "deniability":
        n_w, s_w = torch.tensor(rec["n_w"]), torch.tensor(rec["s_w"])
        return [f"eta {rec['eta']:g}, {rec['words']} tokens x {rec['draws']} draws: a token comes back unchanged "
                f"N_w = {float(n_w.float().median()):.0f} times (median; max {int(n_w.max())}), with "
                f"S_w = {float(s_w.float().median()):.0f} distinct outputs (median; min {int(s_w.min())})"]
    if a == "inversion":
        return [f"eta {r['eta']:g}: nearest-neighbour inversion recovers {r['accuracy']:.1%} of {rec['tokens']} "
                f"{rec['task']} dev tokens" + (f" (paper, bert-base: {r['paper']:.1%})" if r.get("paper") is not None
                                               else "") for r in rec["rows"]]
    return []
