"""Recipes: the reconstruction attack on instance encoding (Xie & Hong, EMNLP 2021).

* Table 1: k in {1, 2, 4, 6} with m = 1, one release of 100 private examples x 50 encodings per task;
* Figure 1: m in {1, 16, 64, 256, 1024, 4096} with k = 4 (abs() removes any sign mask, so the attack does not
  depend on m);
* beyond the paper: Table 1's k = 4 and 6 over several experiment seeds (``xie2021-seeds``), and the attack at the
  size of a real release, up to 3,000 private examples (``xie2021-scaling``).

The setting and the attack are :mod:`privnlu.attacks.reconstruction.sweep`'s (and
:mod:`privnlu.attacks.reconstruction.scale`'s at scale). Xie & Hong 2022's Figure 2 (the attack against DP
instance encoding) reuses :func:`release_points`.
"""

from __future__ import annotations

import functools
import time

from ..errors import PrivnluError, require
from .registry import Point, Recipe, RunContext, register

PAPER = "xie2021"
TASKS = ("cola", "sst2")
TABLE1_CONDITIONS = ("1:1", "1:2", "1:4", "1:6")
FIGURE1_CONDITIONS = ("1:4", "16:4", "64:4", "256:4", "1024:4", "4096:4")
CLUSTERINGS = ("paper-greedy", "threshold", "clique", "nmf")
N_PRIVATE, EPOCHS, AUX_SIZE = 100, 50, 2000
#: attacker settings a record made before they existed did not have; the behaviour then equals these values
LEGACY_CONFIG = {"nmf_repair_iters": 0, "nmf_repair_start": "seeds", "nmf_repair_rounds": 1}


def condition_name(text: str) -> str:
    """``"16:4"`` -> ``"m16-k4"`` (the name a record files the condition under)."""
    from ..attacks.conditions import parse_condition

    return parse_condition(text).name


def attacker_config(seed: int | None, **over) -> dict:
    """The attacker's :class:`~privnlu.attacks.reconstruction.attack.ReconstructionConfig` as a record stores it."""
    from ..attacks.reconstruction.attack import ReconstructionConfig

    return dict(ReconstructionConfig(seed=seed if seed is not None else 0, **over).__dict__)


def config_of(recorded: dict) -> dict:
    """A record's attacker config, with the settings it predates filled in as they behaved then."""
    full = attacker_config(recorded.get("seed"))
    return {**full, **{k: v for k, v in LEGACY_CONFIG.items() if k not in recorded}, **recorded}


def release_settings(task: str, conditions: tuple[str, ...], o: dict, *, config: dict, dp: dict | None = None,
                     queries: int = N_PRIVATE) -> dict:
    return {"task": task, "conditions": [condition_name(c) for c in conditions], "methods": list(o["methods"]),
            "seed": o["seed"], "queries": queries, "epochs": EPOCHS, "aux_size": AUX_SIZE, "config": config, "dp": dp,
            "train_limit": o.get("train_limit")}


def release_settings_of(r: dict) -> dict:
    conds = r["conditions"]
    first = next(iter(conds.values()))
    cal = first.get("dp_calibration")
    dp = None if cal is None else {"mechanism": cal["mechanism"], "epsilon": cal["target_epsilon"], "delta": cal["delta"],
                                   "clip": cal["clip"], "calibration": cal["calibration"]}
    return {"task": r["task"], "conditions": list(conds), "methods": list(first["methods"]),
            "seed": r["experiment_seed"], "queries": r["n_queries"], "epochs": r["epochs"], "aux_size": r["aux_size"],
            "config": config_of(r["config"]), "dp": dp, "train_limit": r.get("train_limit")}


@functools.lru_cache(maxsize=1)
def _prepared(task: str, train_limit: int | None, data_dir: str | None, cache_dir: str | None):
    from ..training.engine import RunSpec, prepare

    return prepare(RunSpec(task=task, train_limit=train_limit, data_dir=data_dir, cache_dir=cache_dir), progress=False)


def release_run(o: dict, point: Point, ctx: RunContext, recipe: str) -> dict:
    """Attack one release per condition of the point's task (DP instance encoding with its ``dp``)."""
    from ..attacks.conditions import parse_condition
    from ..attacks.reconstruction.attack import ReconstructionConfig
    from ..attacks.reconstruction.sweep import reconstruction_record, reconstruction_sweep
    from ..mechanisms.dp import DPSettings

    s = point.settings
    t0, c0 = time.time(), time.process_time()
    prep = _prepared(s["task"], s["train_limit"], ctx.data_dir, ctx.cache_dir)
    config = ReconstructionConfig(**{**s["config"], "mlp_hidden": tuple(s["config"]["mlp_hidden"])})
    dp = None if s["dp"] is None else DPSettings(**s["dp"])
    conds = tuple(parse_condition(c.removeprefix("m").replace("-k", ":")) for c in s["conditions"])
    log = (lambda m: __import__("sys").stderr.write(m + "\n")) if ctx.progress else (lambda m: None)
    results = reconstruction_sweep(prep, conds, queries=s["queries"], epochs=s["epochs"], aux_size=s["aux_size"],
                                   methods=tuple(s["methods"]), config=config, dp=dp, seed=s["seed"], log=log)
    rec = reconstruction_record(prep, results, queries=s["queries"], epochs=s["epochs"], aux_size=s["aux_size"],
                                config=config, seed=s["seed"], t0=t0, recipe=recipe)
    return {**rec, "train_limit": s["train_limit"], "cpu_seconds": round(time.process_time() - c0, 1)}


def _check(o: dict) -> None:
    bad = [m for m in o["methods"] if m not in CLUSTERINGS]
    require(not bad, f"unknown clustering {', '.join(bad)}; choose from {', '.join(CLUSTERINGS)}")


def _variant(o: dict) -> str:
    return "no-repair" if o["nmf_repair_iters"] == 0 else ("" if o["nmf_repair_iters"] == 50 else f"repair{o['nmf_repair_iters']}")


def _sweep_recipe(name: str, artefact: str, suffix: str, conditions: tuple[str, ...], title: str) -> Recipe:
    def points(o: dict) -> list[Point]:
        cfg = attacker_config(o["seed"], nmf_repair_iters=o["nmf_repair_iters"])
        return [Point(f"rec_{t}_{suffix}", release_settings(t, conditions, o, config=cfg)) for t in o["tasks"]]

    return register(Recipe(name, PAPER, artefact, title,
                           {"tasks": TASKS, "methods": CLUSTERINGS, "nmf_repair_iters": 50, "seed": 0}, points,
                           lambda o, p, ctx: release_run(o, p, ctx, name), release_settings_of, variant=_variant,
                           check=_check))


_sweep_recipe("xie2021-table1", "table1", "k", TABLE1_CONDITIONS,
              "Xie & Hong 2021 Table 1: reconstruction attack success for k in {1, 2, 4, 6} at m = 1, 100 private "
              "examples x 50 encodings, CoLA and SST-2, every clustering")
_sweep_recipe("xie2021-figure1", "figure1", "m", FIGURE1_CONDITIONS,
              "Xie & Hong 2021 Figure 1: reconstruction attack success for m in {1, 16, 64, 256, 1024, 4096} at k = 4")


# -- beyond the paper: seeds ------------------------------------------------------------------------------------

def _seeds_points(o: dict) -> list[Point]:
    out = []
    for seed in o["seeds"]:
        for c in o["conditions"]:
            cfg = attacker_config(seed)
            s = release_settings(o["task"], (c,), {**o, "seed": seed}, config=cfg, queries=o["queries"])
            out.append(Point(f"rec_{o['task']}_n{o['queries']}_{condition_name(c)}_s{seed}", s))
    return out


register(Recipe(
    "xie2021-seeds", PAPER, "seeds",
    "Beyond the paper: Table 1's k = 4 and k = 6 releases on SST-2 over three experiment seeds (fresh secrets, "
    "examples and attacker initialisation per seed)",
    {"task": "sst2", "conditions": ("1:4", "1:6"), "seeds": (0, 1, 2), "methods": CLUSTERINGS, "queries": N_PRIVATE,
     "train_limit": None},
    _seeds_points, lambda o, p, ctx: release_run(o, p, ctx, "xie2021-seeds"), release_settings_of, check=_check))


# -- beyond the paper: the attack at the size of a real release --------------------------------------------------

SCALE_FIXED = {"task": "sst2", "train_limit": 20000, "m": "256", "k": 4, "epochs": 50, "methods": ["nmf"],
               "nmf_iters": 150, "nmf_support": 64, "nmf_seeds": "clique", "nmf_repair_start": "seeds"}
#: all pairs of encodings are scored only up to this many private examples (memory grows with the square)
ALL_PAIRS_MAX_N = 100


def _repairs(o: dict) -> list[tuple[int, int]]:
    out = []
    for text in o["repair"]:
        rounds, _, iters = text.partition("x")
        if not (rounds.isdigit() and iters.isdigit() and int(rounds) >= 1):
            raise PrivnluError(f"--repair takes ROUNDSxITERS, e.g. 3x40, not '{text}'")
        out.append((int(rounds), int(iters)))
    return out


def _scale_points(o: dict) -> list[Point]:
    out = []
    for n in o["n"]:
        for g in o["graph"]:
            if g == 0 and n > ALL_PAIRS_MAX_N:
                continue
            for s in o["seeds"]:
                for rounds, iters in _repairs(o):
                    settings = {**SCALE_FIXED, "n": n, "graph": g, "sample_seed": s, "defender_seed": s + 1,
                                "nmf_repair_rounds": rounds, "nmf_repair_iters": iters}
                    out.append(Point(f"scale_sst2_n{n}_g{g}_s{s}_r{rounds}i{iters}", settings))
    return out


def _scale_settings(r: dict) -> dict:
    return {"task": r["task"], "train_limit": r["train_limit"], "m": str(r["m"]), "k": r["k"],
            "epochs": r["n_encodings"] // r["n_private"], "methods": list(r["success"]), "nmf_iters": r["nmf_iters"],
            "nmf_support": r["nmf_support"], "nmf_seeds": r["nmf_seeds"],
            "nmf_repair_start": r.get("nmf_repair_start") or "seeds", "n": r["n_private"],
            "graph": r["graph_neighbours"] or 0, "sample_seed": r.get("sample_seed", 0),
            "defender_seed": r.get("defender_seed", 1), "nmf_repair_rounds": r.get("nmf_repair_rounds") or 1,
            "nmf_repair_iters": r["nmf_repair_iters"]}


def _scale_run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.reconstruction.scale import scale_record

    s = point.settings
    prep = _prepared(s["task"], s["train_limit"], ctx.data_dir, ctx.cache_dir)
    return scale_record(prep.train_x, torch.tensor(prep.train.labels), prep.train.texts_a, task=s["task"],
                        train_limit=s["train_limit"], n=s["n"], epochs=s["epochs"], m=s["m"], k=s["k"], graph=s["graph"],
                        methods=tuple(s["methods"]), nmf_iters=s["nmf_iters"], nmf_support=s["nmf_support"],
                        nmf_seeds=s["nmf_seeds"], nmf_repair_iters=s["nmf_repair_iters"],
                        nmf_repair_start=s["nmf_repair_start"], nmf_repair_rounds=s["nmf_repair_rounds"],
                        sample_seed=s["sample_seed"], defender_seed=s["defender_seed"])


register(Recipe(
    "xie2021-scaling", PAPER, "scaling",
    "Beyond the paper: the reconstruction attack (nmf) on one SST-2 TextHide (256, 4) release of n private "
    "examples x 50 encodings, all pairs (n <= 100) or a k-NN graph of the encodings, with time and memory",
    {"n": (100, 300, 1000, 3000), "graph": (0, 200), "seeds": (0,), "repair": ("1x50",)},
    _scale_points, _scale_run, _scale_settings, check=lambda o: None if _repairs(o) else None))


# -- the paper's own method (vanilla MLP + greedy), run as fairly as its authors would ---------------------------

#: encodings per private example in the paper-method recipe: fewer than Table 1's 50 (CPU time; stated in the
#: record and the docs); a cluster is then k x 20 encodings instead of k x 50
PAPER_METHOD_EPOCHS = 20


def _paper_method_points(o: dict) -> list[Point]:
    from ..attacks.reconstruction.paper_method import PaperMethodConfig

    out = []
    for task in o["tasks"]:
        for seed in o["seeds"]:
            for c in o["conditions"]:
                cfg = PaperMethodConfig(pair_data=o["pair_data"], seed=seed).to_json()
                s = {"task": task, "condition": condition_name(c), "seed": seed, "queries": o["queries"],
                     "epochs": PAPER_METHOD_EPOCHS, "aux_size": AUX_SIZE, "config": cfg}
                out.append(Point(f"pm_{task}_{condition_name(c)}_s{seed}", s))
    return out


def _paper_method_settings(r: dict) -> dict:
    return {"task": r["task"], "condition": r["condition"]["name"], "seed": r["experiment_seed"],
            "queries": r["n_queries"], "epochs": r["epochs"], "aux_size": r["aux_size"], "config": r["config"]}


def _paper_method_run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.conditions import parse_condition
    from ..attacks.reconstruction.paper import MLPConfig
    from ..attacks.reconstruction.paper_method import PaperMethodConfig, paper_method_audit
    from ..attacks.reconstruction.sweep import select_examples
    from ..rng import SecretGenerator
    from ..version import __version__

    s = point.settings
    t0, c0 = time.time(), time.process_time()
    prep = _prepared(s["task"], None, ctx.data_dir, ctx.cache_dir)
    cfg = dict(s["config"])
    cfg = PaperMethodConfig(**{**cfg, "mlp": MLPConfig(**{**cfg["mlp"], "hidden": tuple(cfg["mlp"]["hidden"])})})
    priv, aux, _ = select_examples(prep, s["queries"], s["aux_size"], s["seed"])
    labels = torch.tensor(prep.train.labels)
    cond = parse_condition(s["condition"].removeprefix("m").replace("-k", ":"))
    log = (lambda m: __import__("sys").stderr.write(m + "\n")) if ctx.progress else (lambda m: None)
    log(f"  {s['task']} {cond.name} seed {s['seed']} ({cfg.pair_data} pairs)")
    res = paper_method_audit(prep.train_x[priv].float(), labels[priv], prep.train_x[aux].float(), cond,
                             SecretGenerator(s["seed"], warn=False), epochs=s["epochs"],
                             num_labels=len(prep.task.label_names), config=cfg, log=log)
    return {"kind": "attack", "attack": "reconstruct-paper-method", "privnlu": __version__, "task": prep.task.name,
            "condition": res, "experiment_seed": s["seed"], "n_queries": s["queries"], "epochs": s["epochs"],
            "aux_size": s["aux_size"], "config": s["config"], "recipe": "xie2021-table1-paper-method",
            "seconds": round(time.time() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1)}


def _paper_method_check(o: dict) -> None:
    from ..attacks.reconstruction.paper import PAIR_DATA

    require(o["pair_data"] in PAIR_DATA, f"pair data is {', '.join(PAIR_DATA)}, not '{o['pair_data']}'")
    bad = [t for t in o["tasks"] if t not in TASKS]
    require(not bad, f"xie2021-table1-paper-method runs {', '.join(TASKS)}, not {', '.join(bad)}")
    for c in o["conditions"]:
        condition_name(c)


register(Recipe(
    "xie2021-table1-paper-method", PAPER, "table1-paper-method",
    "Xie & Hong 2021 Table 1 at k = 4 and 6 with the paper's own method run fairly: the vanilla-MLP pair network "
    "trained to convergence on pairs from the private distribution (the paper's threat model), the greedy rule with "
    "and without duplicate control, and oracle checks (true share matrix; privnlu's factorised network); "
    f"100 private examples x {PAPER_METHOD_EPOCHS} encodings, per experiment seed",
    {"tasks": TASKS[::-1], "conditions": ("1:4", "1:6"), "seeds": (0, 1, 2), "queries": N_PRIVATE,
     "pair_data": "private-distribution"},
    _paper_method_points, _paper_method_run, _paper_method_settings, check=_paper_method_check,
    variant=lambda o: "" if o["pair_data"] == "private-distribution" else o["pair_data"]))
