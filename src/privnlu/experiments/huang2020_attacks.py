"""Recipes: the attacks of TextHide (Huang, Song, Chen, Li, Arora; Findings of EMNLP 2020).

* Table 2: the gradient-matching attack (Algorithm 3) per (d, k), one point per cell; Figure 3: the loss curves
  of a successful and a failed attack, drawn from the same run's recorded curves;
* Table 3: similarity search with privatized representations (section 4.4); Table 4: its example queries;
* Table 8: representation inversion with the whole training split as known pairs (appendix C.3); Table 7: the
  inversion's example queries, on 2,000 known pairs;
* federated text recovery (beyond the paper): the embedding-gradient read-off and sentence linking on the
  federated joint mode's client messages (:mod:`privnlu.attacks.gradient.text_recovery`).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

from ..errors import PrivnluError, require
from .registry import Point, Recipe, RunContext, pick, register

PAPER = "huang2020"
ATTACK_CONDITIONS = ("baseline", "mix-only", "texthide", "random")


def _log(ctx: RunContext):
    import sys

    return (lambda s: sys.stderr.write(s + "\n")) if ctx.progress else (lambda s: None)


# -- Table 2 and Figure 3: gradient matching -------------------------------------------------------------------

def _gm_common(o: dict) -> dict:
    return {"task": o["task"], "victim": o["victim"], "train_limit": o["train_limit"], "trials": o["trials"],
            "iterations": o["iterations"], "seed": o["seed"], "dims": list(o["dims"]), "ks": list(o["ks"])}


def _gm_points(o: dict) -> list[Point]:
    return [Point(f"d{d}-k{k}", {**_gm_common(o), "cell": [d, k]}) for d in o["dims"] for k in o["ks"]]


def _gm_settings(r: dict) -> dict:
    return {"task": r["task"], "victim": r.get("victim", "input"), "train_limit": r.get("train_limit"),
            "trials": r["trials"], "iterations": r["config"]["iterations"], "seed": r["config"]["seed"],
            "dims": r["dims"], "ks": r["ks"], "cell": r.get("cell")}


@functools.lru_cache(maxsize=2)
def _train_features(task: str, train_limit: int | None, data_dir: str | None, cache_dir: str | None):
    """The packaged encoder's representations of a task's training split (from the feature cache)."""
    from ..data import get_task
    from ..models import FeatureCache, load_encoder

    enc = load_encoder()
    train = get_task(task).load("train", data_dir).head(train_limit)
    return enc, FeatureCache(cache_dir).get(enc, train, progress=False)


def _gm_check(o: dict) -> None:
    require(bool(o["dims"]) and bool(o["ks"]), "give at least one --dims and one --ks value")


def _gm_warm(o: dict, ctx: RunContext) -> None:
    _train_features(o["task"], o["train_limit"], ctx.data_dir, ctx.cache_dir)


def _gm_run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.gradient.matching import GradientMatchingConfig, plan, summarize, sweep
    from ..models.encoder import public_model_name
    from ..paper_values.huang2020_gradient import PAPER_TABLE2

    t0 = time.time()
    d, k = point.settings["cell"]
    enc, feats = _train_features(o["task"], o["train_limit"], ctx.data_dir, ctx.cache_dir)
    cfg = GradientMatchingConfig(iterations=o["iterations"], seed=o["seed"])
    grid = dict(dims=list(o["dims"]), ks=list(o["ks"]), trials=o["trials"], seed=o["seed"], victim=o["victim"])
    # the cell's trials are those of the whole sweep's plan (paired rounds): the other cells are skipped
    others = {(t.dim, t.k, t.seed) for t in plan(feats.features.shape[0], **grid) if (t.dim, t.k) != (d, k)}
    log = _log(ctx)
    rows = sweep(feats.features, torch.as_tensor(feats.labels), config=cfg, skip=others, **grid,
                 progress=lambda r: log(f"d={r['d']} k={r['k']} success={r['success']} ({r['seconds']:.1f} s)"))
    return {"kind": "gradient_attack", "source": "sweep", "complete": len(rows) == o["trials"], "task": o["task"],
            "train_limit": o["train_limit"], "encoder": f"{public_model_name(enc)} ({enc.pooling})",
            "victim": o["victim"], "batch_size": 1, "m": 1, "trials": o["trials"], "dims": list(o["dims"]),
            "ks": list(o["ks"]), "cell": [d, k], "config": cfg.__dict__, "summary": summarize(rows),
            "paper": PAPER_TABLE2, "rows": rows, "seconds": round(time.time() - t0, 1)}


GM_DEFAULTS = {"task": "sst2", "victim": "hidden", "dims": (4, 16, 64, 256, 1024), "ks": (0, 1, 2, 4), "trials": 50,
               "iterations": 1200, "train_limit": 20000, "seed": 0}
TABLE2 = register(Recipe(
    "huang2020-table2", PAPER, "table2",
    "TextHide Table 2: gradient-matching attack (DLG) on batch-size-1 gradients, success per masked width d and k "
    "(k = 0: no TextHide), 50 attacks per cell",
    GM_DEFAULTS, _gm_points, _gm_run, _gm_settings, variant=lambda o: "" if o["victim"] == "hidden" else o["victim"],
    check=_gm_check, warm=_gm_warm))


def _fig3_source(o: dict) -> Path:
    return Path(o["source"]) if o["source"] else TABLE2.folder({**GM_DEFAULTS, "victim": o["victim"]})


def _fig3_points(o: dict) -> list[Point]:
    return [Point("curves", {"victim": o["victim"], "source": str(_fig3_source(o)), "k": 1})]


def _fig3_run(o: dict, point: Point, ctx: RunContext) -> dict:
    """The first successful and the first failed attack at k = 1 (by d, then round) of Table 2's records, with
    their recorded curves (gradient distance, MSE(x', x), MSE(s', sigma) after each L-BFGS step)."""
    from ..io import read_json, record_files

    src = _fig3_source(o)
    recs = [read_json(p) for p in record_files(src)]
    rows = sorted((row for r in recs if r.get("kind") == "gradient_attack" and r.get("source") == "sweep"
                   and r.get("victim", "input") == o["victim"] for row in r["rows"] if int(row["k"]) == 1 and row.get("curve")),
                  key=lambda row: (int(row["d"]), int(row["seed"])))
    require(bool(rows), f"huang2020-figure3 draws the curves of huang2020-table2's attacks at k = 1: {src} holds none "
                        "(run `privnlu reproduce huang2020-table2` first)")
    finite = lambda row: all(v == v and abs(v) != float("inf") for p in row["curve"] for v in p[1:3])  # noqa: E731
    good = next((r for r in rows if r["success"]), None)
    bad = next((r for r in rows if not r["success"] and finite(r)), None) or next((r for r in rows if not r["success"]), None)
    chosen = [{**r, "outcome": outcome} for r, outcome in ((good, "succeeded"), (bad, "failed")) if r is not None]
    return {"kind": "gradient_attack", "source": "figure3", "victim": o["victim"], "from": str(src), "k": 1,
            "attacks_at_k1": len(rows), "rows": chosen}


def _fig3_check(o: dict) -> None:
    src = _fig3_source(o)
    from ..io import record_files

    require(src.is_dir() and bool(record_files(src)), f"huang2020-figure3 draws the curves of huang2020-table2's attacks: "
                                                      f"{src} holds none (run `privnlu reproduce huang2020-table2` first)")


register(Recipe(
    "huang2020-figure3", PAPER, "figure3",
    "TextHide Figure 3: gradient distance, MSE(x', x) and MSE(s', sigma) over the iterations of a successful and a "
    "failed attack at k = 1, from huang2020-table2's recorded curves",
    {"victim": "hidden", "source": None}, _fig3_points, _fig3_run,
    lambda r: {"victim": r["victim"], "source": r["from"], "k": r["k"]},
    variant=lambda o: "" if o["victim"] == "hidden" else o["victim"], check=_fig3_check))


# -- Tables 3, 4, 7, 8: similarity search and representation inversion ------------------------------------------

def _leak_common(o: dict, task: str) -> dict:
    return {"task": task, "queries": o["queries"], "seed": o["seed"], "pooling": o["pooling"], "sbert": o["sbert"],
            "train_limit": o["train_limit"], "conditions": list(ATTACK_CONDITIONS)}


def _leak_settings(r: dict) -> dict:
    return {"task": r["task"], "queries": r["n_queries"], "seed": r["experiment_seed"], "pooling": r["pooling"],
            "sbert": any("sbert" in c["metrics"] for c in r["conditions"].values()),
            "train_limit": r.get("train_limit"), "conditions": list(r["conditions"])}


@functools.lru_cache(maxsize=2)
def _prepared(task: str, pooling: str, train_limit: int | None, data_dir: str | None, cache_dir: str | None):
    from ..training.engine import RunSpec, prepare

    prep = prepare(RunSpec(task=task, pooling=pooling, train_limit=train_limit, data_dir=data_dir, cache_dir=cache_dir),
                   progress=False)
    require(not prep.task.is_regression, f"attack audits need a classification task; {task} is a regression task")
    return prep


def _leak_warm(o: dict, ctx: RunContext) -> None:
    for task in o["tasks"]:
        _prepared(task, o["pooling"], o["train_limit"], ctx.data_dir, ctx.cache_dir)


def _leak_record(o: dict, attack: str, threat, prep, results: dict, t0: float, **extra) -> dict:
    from ..models.encoder import public_model_name
    from ..version import __version__

    return {"kind": "attack", "attack": attack, "privnlu": __version__, "task": prep.task.name,
            "threat_model": threat.to_json(), "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling,
            "n_queries": o["queries"], "conditions": results, "experiment_seed": o["seed"],
            "seconds": round(time.time() - t0, 2), "train_limit": o["train_limit"], **extra}


def _query_idx(n: int, queries: int, seed: int | None):
    import torch

    require(queries <= n, f"--queries {queries} is more than the {n} examples available")
    g = torch.Generator().manual_seed(seed if seed is not None else 0)  # which examples are audited; not a secret
    return torch.randperm(n, generator=g)[:queries].sort().values


def _conditions():
    from ..attacks.conditions import parse_condition

    return tuple(parse_condition(c) for c in ATTACK_CONDITIONS)


def _embed(o: dict):
    if not o["sbert"]:
        return None
    from ..attacks.representation.leakage import sbert_embedder

    return sbert_embedder()


def _search_run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.representation.audit import search_audit
    from ..attacks.threat import SEARCH_THREAT, Corpus
    from ..rng import SecretGenerator

    t0 = time.time()
    prep = _prepared(point.settings["task"], o["pooling"], o["train_limit"], ctx.data_dir, ctx.cache_dir)
    corpus = Corpus(prep.train.texts_a, prep.train_x, torch.tensor(prep.train.labels))
    idx = _query_idx(len(corpus), o["queries"], o["seed"])
    res = search_audit(corpus, idx, _conditions(), SecretGenerator(o["seed"], warn=False), embed=_embed(o),
                       guess_seed=o["seed"] or 0)
    return _leak_record(o, "search", SEARCH_THREAT, prep, res, t0, corpus=f"{prep.task.name}/train",
                        corpus_size=len(corpus))


def _invert_run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.representation.audit import inversion_audit
    from ..attacks.representation.inversion import InversionConfig
    from ..attacks.threat import INVERSION_THREAT, Corpus
    from ..rng import SecretGenerator

    t0 = time.time()
    prep = _prepared(point.settings["task"], o["pooling"], o["train_limit"], ctx.data_dir, ctx.cache_dir)
    split = prep.task.eval_splits[0]
    dev = Corpus(prep.evals[split].texts_a, prep.eval_x[split], torch.tensor(prep.evals[split].labels))
    idx = _query_idx(len(dev), o["queries"], o["seed"])
    config = InversionConfig(seed=o["seed"] if o["seed"] is not None else 0)
    res = inversion_audit(prep.train_x, torch.tensor(prep.train.labels), dev, idx, _conditions(),
                          SecretGenerator(o["seed"], warn=False), embed=_embed(o), config=config,
                          guess_seed=o["seed"] or 0)
    return _leak_record(o, "invert", INVERSION_THREAT, prep, res, t0, corpus=f"{prep.task.name}/{split}",
                        corpus_size=len(dev), n_known_pairs=len(prep.train),
                        mlp={"hidden": list(config.hidden), "epochs": config.epochs})


def _leak_recipe(name: str, artefact: str, attack: str, title: str, defaults: dict, run) -> Recipe:
    def points(o: dict) -> list[Point]:
        return [Point(f"{attack}_{t}", _leak_common(o, t)) for t in o["tasks"]]

    def variant(o: dict) -> str:
        return "" if o["pooling"] == defaults["pooling"] else f"{o['pooling']}-pooling"

    return register(Recipe(name, PAPER, artefact, title, defaults, points, run, _leak_settings, variant=variant,
                           warm=_leak_warm))


LEAK = {"tasks": ("cola", "sst2"), "pooling": "cls", "seed": 0}
TABLE3 = _leak_recipe("huang2020-table3", "table3", "search",
                      "TextHide Table 3: similarity search with privatized representations, 1,000 training queries "
                      "against the whole training split (baseline, mix-only, TextHide (256, 4), random guess)",
                      {**LEAK, "queries": 1000, "train_limit": None, "sbert": True}, _search_run)
_leak_recipe("huang2020-table8", "table8", "invert",
             "TextHide Table 8: representation inversion (MLP from encoding to representation, then search), the "
             "whole training split as known pairs, 500 dev queries",
             {**LEAK, "queries": 500, "train_limit": None, "sbert": True}, _invert_run)
TABLE7 = _leak_recipe("huang2020-table7", "table7", "invert",
                      "TextHide Table 7: example queries of the representation inversion, 2,000 known training pairs, "
                      "500 dev queries",
                      {**LEAK, "queries": 500, "train_limit": 2000, "sbert": False}, _invert_run)


def _examples_points(o: dict) -> list[Point]:
    return [Point(f"examples_{t}", {"task": t, "source": str(Path(o["source"] or TABLE3.folder(TABLE3.defaults))
                                                               / f"search_{t}.json")}) for t in o["tasks"]]


def _examples_run(o: dict, point: Point, ctx: RunContext) -> dict:
    """The example queries of a Table 3 search record: per condition, the first three queries and, where none
    retrieved itself, the first that did."""
    from ..io import read_json

    r = read_json(point.settings["source"])
    src = point.settings["source"]
    return {"kind": "attack", "attack": "search-examples", "task": r["task"], "from": str(src),
            "n_queries": r["n_queries"], "experiment_seed": r.get("experiment_seed"), "pooling": r.get("pooling"),
            "corpus": r.get("corpus"), "corpus_size": r.get("corpus_size"),
            "conditions": {c: {**pick(v, "m", "k"), "examples": v.get("examples", [])} for c, v in r["conditions"].items()}}


def _examples_check(o: dict) -> None:
    for p in _examples_points(o):
        if not Path(p.settings["source"]).exists():
            raise PrivnluError(f"huang2020-table4 shows the example queries of huang2020-table3's search: "
                               f"{p.settings['source']} does not exist (run `privnlu reproduce huang2020-table3` first)")


register(Recipe(
    "huang2020-table4", PAPER, "table4",
    "TextHide Table 4: example queries of the similarity search and what each condition retrieved, from "
    "huang2020-table3's records",
    {"tasks": ("cola", "sst2"), "source": None}, _examples_points, _examples_run,
    lambda r: {"task": r["task"], "source": r["from"]}, check=_examples_check))


# -- federated text recovery (beyond the paper) ------------------------------------------------------------------

def _tr_points(o: dict) -> list[Point]:
    return [Point(f"text_recovery_b{b}", {"task": o["task"], "batch_size": b, "trials": o["trials"],
                                          "span_trials": o["span_trials"],
                                          "budget": o["budget"], "train_limit": o["train_limit"], "seed": o["seed"],
                                          "schemes": list(o["schemes"])})
            for b in o["batch_sizes"]]


def _tr_argv(s: dict) -> list[str]:
    """One point's settings as its record states them (command-line style, the form of the committed records)."""
    return ["--batch-sizes", str(s["batch_size"]), "--trials", str(s["trials"]), "--span-trials", str(s["span_trials"]),
            "--budget", str(s["budget"]), "--train-limit", str(s["train_limit"]), "--seed", str(s["seed"])]


def _tr_settings(r: dict) -> dict:
    a = dict(zip(r["argv"][::2], r["argv"][1::2]))
    return {"task": r["task"], "batch_size": int(a["--batch-sizes"]), "trials": int(a["--trials"]),
            "span_trials": int(a.get("--span-trials", 0)), "budget": int(a.get("--budget", 150)),
            "train_limit": int(a.get("--train-limit", 512)), "seed": int(a.get("--seed", 0)),
            "schemes": [x["scheme"] for x in r["results"]]}


def _tr_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.gradient.text_recovery import measure
    from ..federated.config import FederatedConfig
    from ..schemes import get

    s, results = point.settings, []
    for scheme in s["schemes"]:
        th = dict(m="16", k=min(4, s["batch_size"])) if get(scheme).private else dict(m="0", k=1)
        cfg = FederatedConfig(task=s["task"], model="", clients=2, rounds=1, batch_size=s["batch_size"], mode="joint",
                              train_embeddings=True, scheme=scheme, train_limit=s["train_limit"], dev_limit=8,
                              seed=s["seed"], eval_mask="none", **th)
        results.append(measure(cfg, trials=s["trials"], budget=s["budget"], seed=s["seed"], span_trials=s["span_trials"]))
    return {"kind": "embedding_leak_sweep", "task": s["task"], "results": results, "argv": _tr_argv(s)}


register(Recipe(
    "huang2020-federated-text-recovery", PAPER, "federated-text-recovery",
    "Beyond the paper: text recovered from federated TextHide's joint-mode client messages (embedding-gradient "
    "token read-off, sentence linking, the first-layer span test), without and with TextHide",
    {"task": "sst2", "batch_sizes": (1,), "trials": 6, "span_trials": 1, "budget": 40, "train_limit": 512,
     "seed": 0, "schemes": ("none", "texthide")},
    _tr_points, _tr_run, _tr_settings))
