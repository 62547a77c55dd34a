"""Recipes: d_chi-privacy for BERT (Qu, Kong, Yang, Zhang, Bendersky, Najork; CIKM 2021), section 5's analyses.

* Tables 1-2: the paper's sentence privatized at each eta, and each token's top outputs, how often it is unchanged
  (N_w) and its distinct outputs (S_w) over 1,000 draws (one record per eta of the top-outputs table);
* Table 3: nearest-neighbour inversion of M_rep on every token of a task's dev split;
* Figure 3: the noise norm against n / eta and the table's nearest-neighbour distances;
* Figure 4: N_w and S_w of every regular token of the vocabulary, one record per eta;
* the eta that gives MiniLM the paper's inversion accuracy at eta = 100 (beyond the paper);
* section 6.2's sequence-representation privatization re-examined: the frozen head on clean and on privatized
  [CLS] vectors (beyond the paper).

The analyses are :mod:`privnlu.attacks.dchi.analysis`'s; MiniLM (384-d) stands in for bert-base (768-d), so equal
eta is not equal privacy. The training recipes (Tables 4-7) are in :mod:`.qu2021_training`.
"""

from __future__ import annotations

import functools
import time

from ..errors import require
from ..mechanisms.dchi_modes import REP, TEXT
from .registry import Point, Recipe, RunContext, pick, register

PAPER = "qu2021"
#: the paper's etas (Tables 3-5)
PAPER_ETAS = (50.0, 75.0, 100.0, 125.0, 150.0, 175.0)


def _label(eta: float) -> str:
    return f"{eta:g}"


@functools.lru_cache(maxsize=1)
def _space(model: str | None):
    from ..mechanisms.dchi import load_token_space

    return load_token_space(model)


def _rng(seed: int | None):
    from ..rng import SecretGenerator

    return SecretGenerator(seed, warn=False)


def _finish(rec: dict, o: dict) -> dict:
    return {**rec, "model": o.get("model") or "packaged MiniLM", "seed": o["seed"]}


# -- Tables 1-2 ----------------------------------------------------------------------------------------------------

def _examples_points(o: dict) -> list[Point]:
    from ..paper_values.qu2021 import SENTENCE

    return [Point(f"examples_eta{_label(e)}", {"etas": list(o["etas"]), "top_eta": e, "draws": o["draws"],
                                                "seed": o["seed"], "sentence": SENTENCE}) for e in o["top_etas"]]


def _examples_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.dchi import analysis as dchi_analysis

    space, tok = _space(None)
    s = point.settings
    return _finish(dchi_analysis.examples(space, tok, tuple(o["etas"]), _rng(o["seed"]), sentence=s["sentence"],
                                          top_eta=s["top_eta"], draws=o["draws"]), o)


register(Recipe(
    "qu2021-table1-2", PAPER, "table1-2",
    "Qu et al. Tables 1-2: the paper's sentence privatized (M_txt) once per eta; each token's top outputs, N_w and "
    "S_w over 1,000 draws at the top-outputs eta",
    {"etas": (50.0, 65.55, 75.0, 100.0, 125.0, 150.0, 175.0), "top_etas": (100.0, 65.55), "draws": 1000, "seed": 0},
    _examples_points, _examples_run,
    lambda r: {"etas": [x["eta"] for x in r["privatized"]], "top_eta": r["top_eta"], "draws": r["draws"],
               "seed": r.get("seed"), "sentence": r["sentence"]}))


# -- Table 3 and the calibrated eta ----------------------------------------------------------------------------------

def _inversion_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.dchi import analysis as dchi_analysis

    space, tok = _space(None)
    task = point.settings["task"]
    tokens = dchi_analysis.dataset_tokens(task, "dev", tokenizer=tok, data_dir=ctx.data_dir, limit=o["max_tokens"])
    rec = dchi_analysis.inversion(space, tokens, tuple(o["etas"]), _rng(o["seed"]), task=task)
    return _finish({**rec, "max_tokens": o["max_tokens"]}, o)


register(Recipe(
    "qu2021-table3", PAPER, "table3",
    "Qu et al. Table 3: nearest-neighbour inversion accuracy of M_rep on every token of the dev split (SST-2; MRPC "
    "stands in for QQP)",
    {"tasks": ("sst2", "mrpc"), "etas": PAPER_ETAS, "max_tokens": None, "seed": 0},
    lambda o: [Point(f"inversion_{t}", {"task": t, "etas": list(o["etas"]), "max_tokens": o["max_tokens"],
                                         "seed": o["seed"]}) for t in o["tasks"]],
    _inversion_run,
    lambda r: {"task": r["task"], "etas": [x["eta"] for x in r["rows"]], "max_tokens": r.get("max_tokens"),
               "seed": r.get("seed")}))


def _calibration_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.dchi import analysis as dchi_analysis

    space, tok = _space(None)
    rng = _rng(o["seed"])
    src = o["tokens"]
    if src == "vocab":
        n = min(o["max_tokens"], len(space.regular_ids))
        tokens = space.regular_ids[rng.choice(len(space.regular_ids), n)]
    else:
        tokens = dchi_analysis.dataset_tokens(src, "dev", tokenizer=tok, data_dir=ctx.data_dir, limit=o["max_tokens"])
    rec = dchi_analysis.calibrate_eta(space, tokens, o["target"], rng)
    return _finish({**rec, "tokens_from": src, "max_tokens": o["max_tokens"]}, o)


register(Recipe(
    "qu2021-eta-calibration", PAPER, "eta-calibration",
    "Beyond the paper: the eta at which nearest-neighbour inversion of MiniLM's M_rep matches the paper's "
    "bert-base accuracy at eta = 100 (0.3402 on SST), on the first 3,000 SST-2 dev tokens",
    {"target": 0.3402, "tokens": "sst2", "max_tokens": 3000, "seed": 0},
    lambda o: [Point(f"calibrate_{o['tokens']}", pick(o, "target", "tokens", "max_tokens", "seed"))],
    _calibration_run,
    lambda r: {"target": r["target_accuracy"], "tokens": r["tokens_from"], "max_tokens": r.get("max_tokens"),
               "seed": r.get("seed")},
    check=lambda o: require(0 < o["target"] < 1, f"--target must be in (0, 1), not {o['target']}")))


# -- Figures 3-4 -------------------------------------------------------------------------------------------------------

def _geometry_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.dchi import analysis as dchi_analysis

    space, _ = _space(None)
    return _finish(dchi_analysis.geometry(space, tuple(o["etas"]), _rng(o["seed"]), sample=o["sample"]), o)


register(Recipe(
    "qu2021-figure3", PAPER, "figure3",
    "Qu et al. Figure 3: mean noise norm against n / eta, and the token table's mean k-th nearest-neighbour "
    "distances",
    {"etas": (25.0, 50.0, 65.55, 75.0, 100.0, 125.0, 150.0, 175.0, 300.0), "sample": None, "seed": 0},
    lambda o: [Point("geometry", pick(o, "etas", "sample", "seed"))], _geometry_run,
    lambda r: {"etas": [x["eta"] for x in r["noise"]], "sample": None if r["knn_rows"] == "all" else r["knn_rows"],
               "seed": r.get("seed")}))


def _deniability_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.dchi import analysis as dchi_analysis

    space, _ = _space(None)
    s = point.settings
    rec = dchi_analysis.deniability(space, s["eta"], _rng(o["seed"]), draws=o["draws"], sample=o["sample"])
    return _finish({**rec, "sample": o["sample"]}, o)


register(Recipe(
    "qu2021-figure4", PAPER, "figure4",
    "Qu et al. Figure 4: plausible deniability, N_w and S_w of every regular token over 1,000 draws, one record "
    "per eta (exact search)",
    {"etas": PAPER_ETAS, "draws": 1000, "sample": None, "seed": 0},
    lambda o: [Point(f"deniability_eta{_label(e)}", {"eta": e, "draws": o["draws"], "sample": o["sample"],
                                                     "seed": o["seed"]}) for e in o["etas"]],
    _deniability_run,
    lambda r: {"eta": r["eta"], "draws": r["draws"], "sample": r.get("sample"), "seed": r.get("seed")}))


# -- section 6.2: sequence-representation privatization re-examined ----------------------------------------------

def _with_cached_features(prep, cache_dir: str | None, data_dir: str | None):
    """``prep`` with the user-side [CLS] representations of both splits taken from the feature cache (the same
    encoder, pooling and max length as ``privnlu train``) instead of encoding them again."""
    from dataclasses import replace

    from ..models import FeatureCache

    cache = FeatureCache(cache_dir)
    out = {}
    for name, split in (("train", prep.train), ("dev", prep.dev)):
        ds = prep.task.load("train" if name == "train" else prep.task.eval_splits[0], data_dir).head(len(split.labels))
        out[name] = replace(split, features=cache.get(prep.encoder, ds, max_length=prep.max_length, progress=False).features)
    return replace(prep, train=out["train"], dev=out["dev"])


def sequence_rep(prep, etas: tuple[float, ...], seeds: tuple[int, ...], *, epochs: int = 3) -> dict:
    """The frozen encoder's [CLS] vector privatized with M_seq (the provider trains the head) at each eta, and the
    same head on clean vectors (``eta = None``), per seed: what freezing the encoder costs and what the noise
    costs, apart. Also E||N|| = n / eta beside the mean norm of the representations."""
    from ..training import private_finetune as pf

    rows = []
    for seed in seeds:
        for eta in (None, *etas):
            rng = _rng(seed)
            if eta is None:  # the frozen head on clean vectors (null privacy, encoder frozen; the eta is unused)
                cfg = pf.FinetuneConfig(mode="sequence", eta=1e9, epochs=epochs, seed=seed)
                payloads = (list(prep.train.features), list(prep.dev.features))
            else:
                cfg = pf.FinetuneConfig(mode="sequence", eta=eta, epochs=epochs, seed=seed)
                payloads = pf.privatize(prep, "sequence", eta, rng)
            rec = pf.finetune(prep, cfg, payloads=payloads).record
            rows.append({"eta": eta, "seed": seed, "accuracy": rec["metrics"]["accuracy"], "score": rec["score"]})
    norms = prep.dev.features.norm(dim=1)
    dim = int(prep.dev.features.shape[1])
    return {"kind": "dchi", "analysis": "sequence_rep", "task": prep.task.name, "dim": dim,
            "train_size": len(prep.train.labels), "dev_size": len(prep.dev.labels), "epochs": epochs,
            "rep_norm_mean": float(norms.mean()), "rep_norm_sd": float(norms.std()),
            "noise_norm": {str(e): dim / e for e in etas}, "rows": rows}


def _sequence_rep_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..training import private_finetune as pf

    t0 = time.time()
    prep = _with_cached_features(pf.prepare(o["task"], train_limit=o["train_limit"], max_length=128, data_dir=ctx.data_dir),
                                 ctx.cache_dir, ctx.data_dir)
    rec = sequence_rep(prep, tuple(o["etas"]), tuple(o["seeds"]), epochs=o["epochs"])
    return {**rec, "seconds": round(time.time() - t0, 1)}


register(Recipe(
    "qu2021-sequence-rep", PAPER, "sequence-rep",
    "Beyond the paper: section 6.2's sequence-representation privatization re-examined, the frozen head on clean "
    "and on M_seq-privatized [CLS] vectors, per eta and seed",
    {"task": "sst2", "train_limit": 10000, "etas": (50.0, 87.8, 175.0), "seeds": (0, 1, 2), "epochs": 3},
    lambda o: [Point("sequence_rep", {"task": o["task"], "train_limit": o["train_limit"], "etas": list(o["etas"]),
                                      "seeds": list(o["seeds"]), "epochs": o["epochs"]})],
    _sequence_rep_run,
    lambda r: {"task": r["task"], "train_limit": r["train_size"], "etas": [float(e) for e in r["noise_norm"]],
               "seeds": sorted({x["seed"] for x in r["rows"]}), "epochs": r["epochs"]}))


# -- the empirical audit of d_chi (beyond the paper) ----------------------------------------------------------------

def _audit_run(o: dict, point: Point, ctx: RunContext) -> dict:
    """An empirical audit of eta-d_chi on token pairs of the packaged table: a 95 % lower bound on each pair's
    epsilon from the real mechanism, beside the claim ``eta d(x, x')``
    (:mod:`privnlu.attacks.privacy_audit.mechanism`)."""
    from ..attacks.privacy_audit.mechanism import audit_dchi, pick_pairs
    from ..version import __version__

    s = point.settings
    space, _ = _space(None)
    pairs = pick_pairs(space, s["eta"], s["pairs"], seed=s["seed"])
    res = audit_dchi(space, s["eta"], pairs, mechanism=s["mechanism"], draws=s["draws"], rng=_rng(s["seed"]))
    return {"kind": "dp-audit", "privnlu": __version__, "mechanism": f"dchi-{s['mechanism']}", "eta": s["eta"],
            "pairs": s["pairs"], "draws_per_hypothesis": s["draws"], "experiment_seed": s["seed"],
            "results": [r.to_json() for r in res], "violated": any(r.violated for r in res)}


register(Recipe(
    "qu2021-dchi-audit", PAPER, "dchi-audit",
    "Beyond the paper: empirical audits of eta-d_chi (M_rep, and M_txt with a fifth of the draws) on token pairs of "
    "MiniLM's table, a 95 % lower bound on epsilon beside the claim eta d(x, x')",
    {"etas": (5.0,), "draws": 100_000, "seed": 0},
    lambda o: [Point(f"audit_{m.audit_name}_eta{_label(e)}", {"mechanism": m.audit_name, "eta": e, "pairs": 3,
                                                               "seed": o["seed"], "draws": o["draws"] // 5
                                                               if m.sends_tokens else o["draws"]})
               for e in o["etas"] for m in (REP, TEXT)],
    _audit_run,
    lambda r: {"mechanism": r["mechanism"].removeprefix("dchi-"), "eta": r["eta"], "pairs": r["pairs"],
               "seed": r["experiment_seed"], "draws": r["draws_per_hypothesis"]}))
