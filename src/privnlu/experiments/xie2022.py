"""Recipes: DP instance encoding (Xie & Hong 2022, "Differentially Private Instance Encoding against Privacy
Attacks").

* Figure 1: task utility against epsilon for Laplace and Gaussian DP instance encoding, beside plain TextHide
  (16, 4) and the no-privacy baseline. The DP runs use the paper's scheme, Algorithm 1: clip, mix k = 4 with
  TextHide's coefficients, noise on each encoding and **no sign mask** (``m = 0``, ``dp-ie``); ``--masked`` adds
  TextHide's (16, 4) masks (``dp-ie-masked``). Two calibrations: ``correct`` (every example (epsilon, delta)-DP
  over all ``k x epochs`` encodings it takes part in) and ``paper`` (Theorems 3 and 4 per encoding, **not a
  valid DP guarantee**; each record carries the epsilon the release really has). Dev queries are clean (clipped,
  not noised) unless ``--noisy-queries``. CoLA is scored in accuracy, as the paper plots it, with MCC beside.
  Hyperparameters are the scale's first (no selection: the grid is already 8 x 2 x 2 runs per task).
* Figure 2: the reconstruction attack (Xie & Hong 2021's pipeline) against the same mechanisms at every epsilon.
  Its attacker trains its pair network on **noise-free** simulated releases (``noise_aware=False``, as privnlu's
  attacker did first). ``xie2022-figure2-noise-aware`` reruns it with both attackers (noise-free and noise-aware:
  the simulated releases carry the public mechanism's noise) and both readings of Algorithm 1's draw (fresh noise
  per encoding; one noise vector per batch, as printed, which is not DP).
* the empirical audit of the calibrations (beyond the paper): a 95 % lower bound on epsilon from many draws of
  the real mechanism, beside the claim (:mod:`privnlu.attacks.privacy_audit.mechanism`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import require
from ..io import repeat_name
from .huang2020 import BUDGET, base_spec, prepared, repeats, scale, spec_settings, warm_features
from .registry import ALIASES, Point, Recipe, RunContext, register
from .xie2021 import attacker_config, release_run, release_settings, release_settings_of

if TYPE_CHECKING:
    from ..training.engine import RunSpec

PAPER = "xie2022"
TASKS = ("sst2", "cola")
EPSILONS = (0.1, 1, 2, 4, 8, 10, 15, 20)  # the paper's Figure 1 grid
PAPER_EPSILONS = EPSILONS
ATTACK_CONDITION = "16:4"  # plain TextHide, the reference of Figure 2
MECHANISMS = ("gaussian", "laplace")
CALIBRATIONS = ("correct", "paper")
TEXTHIDE_POINT = (16, 4)  # the paper compares against TextHide (16, 4)
DP_K = 4
GROUP = "xie2022"


def dp_point(masked: bool) -> tuple[int, int]:
    """(m, k) of the DP runs: the paper's (0, 4), or TextHide's masks (16, 4)."""
    return (TEXTHIDE_POINT[0] if masked else 0, DP_K)


def _check(o: dict) -> None:
    require(set(o["mechanisms"]) <= set(MECHANISMS), f"--dp-mechanisms are {', '.join(MECHANISMS)}")
    require(set(o["calibrations"]) <= set(CALIBRATIONS), f"--dp-calibrations are {', '.join(CALIBRATIONS)}")


def _variant(o: dict, *, mode: bool = True) -> str:
    parts = [] if tuple(o["tasks"]) == TASKS else ["-".join(o["tasks"])]
    parts += ["masked"] * bool(o["masked"]) + ["noisy-queries"] * bool(o.get("noisy_queries"))
    return "-".join(parts + ([o["mode"]] if mode else []))


# -- Figure 1 ----------------------------------------------------------------------------------------------------

def _figure1_specs(o: dict) -> list[RunSpec]:
    from ..mechanisms.dp import DPSettings
    from ..training.engine import with_scheme

    sc = scale(o)
    m, k = dp_point(o["masked"])
    specs = []
    for task in o["tasks"]:
        spec0 = base_spec(task, sc, o)
        spec0 = replace(spec0, encoder_lr=sc.encoder_lrs[0], train=replace(spec0.train, lr=sc.lrs[0]))
        specs += [spec0, with_scheme(spec0, m=TEXTHIDE_POINT[0], k=TEXTHIDE_POINT[1])]
        specs += [with_scheme(spec0, m=m, k=k, dp=DPSettings(mechanism=mech, epsilon=eps, delta=1e-5, clip=1.0,
                                                             calibration=cal, noisy_queries=bool(o["noisy_queries"])))
                  for mech in o["mechanisms"] for cal in o["calibrations"] for eps in o["epsilons"]]
    return specs


def _figure1_points(o: dict) -> list[Point]:
    return [Point(repeat_name(f"{s.label}-{s.mode}", r), {"spec": spec_settings(s.to_json(), selected=False)})
            for s in _figure1_specs(o) for r in repeats(o)]


def _figure1_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..params import parse_m
    from ..io import read_json
    from ..mechanisms.dp import scheme_name
    from ..training.engine import train_run
    from ..training.selection import majority

    spec = next(s for s in _figure1_specs(o) if {"spec": spec_settings(s.to_json(), selected=False)} == point.settings)
    spec, prep = prepared(spec, ctx)
    # a record the engine wrote just before an interruption is completed, not retrained; an interrupted run
    # resumes from its last epoch (the engine's checkpoint beside the scratch record)
    done = read_json(ctx.scratch) if ctx.scratch.exists() else None
    rec = done or train_run(spec, prep, out=ctx.scratch, progress=False, group=GROUP)
    ev = next(iter(rec["eval"].values()))
    is_dp = point.settings["spec"].get("dp") is not None
    return {**rec, "scale": scale(o).name, "dp_scheme": scheme_name(parse_m(rec["m"])) if is_dp else None,
            "majority": majority(prep), "accuracy": 100 * ev["accuracy"] if "accuracy" in ev else None}


register(Recipe(
    "xie2022-figure1", PAPER, "figure1",
    "Xie & Hong 2022 Figure 1: utility against epsilon of DP instance encoding (Laplace, Gaussian; correct and the "
    "paper's calibration), the paper's scheme without sign mask, beside TextHide (16, 4) and the baseline, on SST-2 "
    "and CoLA",
    {"tasks": TASKS, "mode": "frozen", "mechanisms": MECHANISMS, "calibrations": CALIBRATIONS, "epsilons": EPSILONS,
     "masked": False, "noisy_queries": False, **BUDGET, "model": None, "seed": None, "repeats": (1, 1)},
    _figure1_points, _figure1_run, lambda r: {"spec": spec_settings(r["spec"], selected=False)},
    variant=_variant, check=_check, warm=lambda o, ctx: warm_features(_figure1_specs(o), scale(o), ctx)))


# -- Figure 2 ----------------------------------------------------------------------------------------------------

def _figure2_points(o: dict) -> list[Point]:
    from ..mechanisms.dp import scheme_name

    m, k = dp_point(o["masked"])
    cfg = attacker_config(o["seed"])
    out = [Point(f"rec_{t}_texthide_m16_k4", release_settings(t, (ATTACK_CONDITION,), o, config=cfg))
           for t in o["tasks"]]
    out += [Point(f"rec_{t}_{scheme_name(m)}_{mech}_{cal}_eps{eps:g}",
                  release_settings(t, (f"{m}:{k}",), o, config=cfg,
                                   dp={"mechanism": mech, "epsilon": eps, "delta": 1e-5, "clip": 1.0, "calibration": cal}))
            for t in o["tasks"] for mech in o["mechanisms"] for cal in o["calibrations"] for eps in o["epsilons"]]
    return out


def _noise_free_settings_of(r: dict) -> dict:
    """A Figure 2 record's settings; a record made before the attacker option trained noise-free."""
    s = release_settings_of(r)
    if "noise_aware" not in r["config"]:
        s["config"] = {**s["config"], "noise_aware": False}
    return s


register(Recipe(
    "xie2022-figure2", PAPER, "figure2",
    "Xie & Hong 2022 Figure 2: reconstruction attack success against epsilon on DP instance encoding (both "
    "calibrations) and on plain TextHide (16, 4), SST-2 and CoLA; privnlu's strongest clustering (nmf), attacker "
    "trained on noise-free simulated releases",
    {"tasks": TASKS, "mechanisms": MECHANISMS, "calibrations": CALIBRATIONS, "epsilons": EPSILONS, "masked": False,
     "methods": ("nmf",), "seed": 0},
    lambda o: [replace(p, settings={**p.settings, "config": {**p.settings["config"], "noise_aware": False}})
               for p in _figure2_points(o)],
    lambda o, p, ctx: release_run(o, p, ctx, "xie2022-figure2"), _noise_free_settings_of,
    variant=lambda o: _variant(o, mode=False), check=_check))


# -- Figure 2 with a noise-aware attacker and Algorithm 1's per-batch reading (beyond the paper) ----------------

#: (attacker, noise reading) in the order the recipe runs them: the combinations Figure 2 lacks first
NOISE_COMBOS = (("noise-aware", "per-encoding"), ("noise-free", "per-batch"), ("noise-aware", "per-batch"),
                ("noise-cancelling", "per-batch"), ("noise-free", "per-encoding"))
#: attacker -> its config: pair network trained on noisy simulated releases; per-batch noise cancelled first
ATTACKERS = {"noise-free": {"noise_aware": False, "cancel_batch_noise": False},
             "noise-aware": {"noise_aware": True, "cancel_batch_noise": False},
             "noise-cancelling": {"noise_aware": True, "cancel_batch_noise": True}}
NOISE_AWARE_DEFAULTS = {"tasks": TASKS, "mechanisms": ("gaussian",), "calibrations": ("correct",), "epsilons": EPSILONS,
                        "masked": False, "methods": ("nmf",), "seed": 0}


#: the order epsilons run in: spread over the grid first, so that a partial run already shows the trend
EPSILON_PRIORITY = (20, 1, 8, 0.1, 4, 15, 2, 10)


def _noise_points(o: dict) -> list[Point]:
    """Every (attacker, reading, task, mechanism, calibration, epsilon); the combinations Figure 2 lacks first, then
    its own (noise-free, per-encoding), each by :data:`EPSILON_PRIORITY` and task."""
    from ..mechanisms.dp import scheme_name

    m, k = dp_point(o["masked"])
    rank = {e: i for i, e in enumerate(EPSILON_PRIORITY)}
    eps_order = sorted(o["epsilons"], key=lambda e: (rank.get(e, len(rank)), e))
    out = []
    for combos in (NOISE_COMBOS[:-1], NOISE_COMBOS[-1:]):
        for eps in eps_order:
            for t in o["tasks"]:
                for attacker, reading in combos:
                    cfg = attacker_config(o["seed"], **ATTACKERS[attacker])
                    out += [Point(f"rec_{t}_{scheme_name(m)}_{mech}_{cal}_{reading}_{attacker}_eps{eps:g}",
                                  {**release_settings(t, (f"{m}:{k}",), o, config=cfg,
                                                      dp={"mechanism": mech, "epsilon": eps, "delta": 1e-5, "clip": 1.0,
                                                          "calibration": cal}), "noise": reading})
                            for mech in o["mechanisms"] for cal in o["calibrations"]]
    return out


def _noise_run(o: dict, point: Point, ctx: RunContext) -> dict:
    """One release of the point's task under DP instance encoding with the point's noise reading, attacked by the
    point's attacker; the record is :func:`~privnlu.attacks.reconstruction.sweep.reconstruction_record`'s."""
    import time

    from ..attacks.conditions import parse_condition
    from ..attacks.reconstruction.attack import ReconstructionConfig
    from ..attacks.reconstruction.sweep import reconstruction_record, reconstruction_sweep
    from ..mechanisms.dp import DPSettings
    from .xie2021 import _prepared

    s = point.settings
    t0, c0 = time.time(), time.process_time()
    prep = _prepared(s["task"], s["train_limit"], ctx.data_dir, ctx.cache_dir)
    config = ReconstructionConfig(**{**s["config"], "mlp_hidden": tuple(s["config"]["mlp_hidden"])})
    cond = parse_condition(s["conditions"][0].removeprefix("m").replace("-k", ":"))
    results = reconstruction_sweep(prep, [cond], queries=s["queries"], epochs=s["epochs"], aux_size=s["aux_size"],
                                   methods=tuple(s["methods"]), config=config, dp=DPSettings(**s["dp"]),
                                   noise=s["noise"], seed=s["seed"], progress=False)
    rec = reconstruction_record(prep, results, queries=s["queries"], epochs=s["epochs"], aux_size=s["aux_size"],
                                config=config, seed=s["seed"], t0=t0, recipe="xie2022-figure2-noise-aware")
    return {**rec, "train_limit": s["train_limit"], "cpu_seconds": round(time.process_time() - c0, 1)}


def _noise_settings_of(r: dict) -> dict:
    first = next(iter(r["conditions"].values()))
    s = release_settings_of(r)
    if "cancel_batch_noise" not in r["config"]:  # made before the option: nothing was cancelled
        s["config"]["cancel_batch_noise"] = False
    return {**s, "noise": first["dp_calibration"].get("noise_reading", "per-encoding")}


register(Recipe(
    "xie2022-figure2-noise-aware", PAPER, "figure2-noise-aware",
    "Beyond the paper: Xie & Hong 2022 Figure 2 with two attackers (pair network trained on noise-free or on noisy "
    "simulated releases: the noise-aware attacker knows the public mechanism and epsilon) and two readings of "
    "Algorithm 1's noise (fresh per encoding; one vector per batch, as printed: not DP), and against the per-batch "
    "reading a third attacker that cancels the shared noise first; SST-2 and CoLA, Gaussian, correct calibration; "
    "nmf clustering",
    NOISE_AWARE_DEFAULTS, _noise_points, _noise_run, _noise_settings_of,
    variant=lambda o: _variant(o, mode=False), check=_check))


# -- the empirical audit of the calibrations (beyond the paper) ---------------------------------------------------

#: (mechanism, calibration, claimed epsilon, dimension, k, encodings per example)
AUDIT_CASES = (
    ("gaussian", "correct", 1, 64, 1, 1), ("gaussian", "correct", 8, 64, 1, 1), ("gaussian", "correct", 8, 64, 4, 5),
    ("laplace", "correct", 1, 64, 1, 1), ("laplace", "correct", 8, 64, 1, 1), ("laplace", "correct", 8, 64, 4, 5),
    ("gaussian", "paper", 1, 64, 1, 1), ("gaussian", "paper", 8, 64, 1, 1),
    ("laplace", "paper", 1, 64, 1, 1), ("laplace", "paper", 1, 384, 1, 1), ("laplace", "paper", 8, 384, 1, 1),
    ("laplace", "paper", 8, 64, 4, 5),
)


def _audit_points(o: dict) -> list[Point]:
    return [Point(f"audit_{mech}_{cal}_eps{eps:g}_d{d}_k{k}x{ep}",
                  {"mechanism": mech, "calibration": cal, "epsilon": eps, "dim": d, "k": k, "encodings": ep,
                   "delta": 1e-5, "clip": 1.0, "draws": o["draws"], "seed": o["seed"]})
            for mech, cal, eps, d, k, ep in AUDIT_CASES]


def _audit_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.privacy_audit.mechanism import audit_encoding, max_certifiable_epsilon
    from ..mechanisms.dp import calibrate
    from ..rng import SecretGenerator
    from ..version import __version__

    s = point.settings
    cal = calibrate(s["mechanism"], epsilon=s["epsilon"], delta=s["delta"], clip=s["clip"], dim=s["dim"], k=s["k"],
                    epochs=s["encodings"], calibration=s["calibration"])
    r = audit_encoding(cal, draws=s["draws"], rng=SecretGenerator(s["seed"], warn=False))
    return {"kind": "dp-audit", "privnlu": __version__, "mechanism": s["mechanism"], "draws_per_hypothesis": s["draws"],
            "experiment_seed": s["seed"], "results": [r.to_json()], "violated": r.violated,
            "case": {k: s[k] for k in ("calibration", "epsilon", "dim", "k", "encodings", "delta", "clip")},
            "largest_certifiable_epsilon": {"delta0": max_certifiable_epsilon(s["draws"] // 2),
                                            "delta1e-5": max_certifiable_epsilon(s["draws"] // 2, 1e-5)}}


register(Recipe(
    "xie2022-dp-audit", PAPER, "dp-audit",
    "Beyond the paper: empirical DP audits of DP instance encoding under the correct and the paper's calibrations "
    "(a 95 % lower bound on epsilon from the real mechanism, beside the claimed epsilon)",
    {"draws": 100_000, "seed": 0},
    _audit_points, _audit_run,
    lambda r: {"mechanism": r["mechanism"], **r["case"], "draws": r["draws_per_hypothesis"], "seed": r["experiment_seed"]}))

# -- the two readings of Algorithm 1's noise draw, checked empirically (beyond the paper) ---------------------------

#: (mechanism, claimed epsilon, dimension), each audited under both readings (correct calibration, k = 1, one pass)
READING_CASES = (("gaussian", 1, 64), ("gaussian", 4, 64), ("laplace", 1, 64))


def _reading_points(o: dict) -> list[Point]:
    return [Point(f"reading_{mech}_{noise}_eps{eps:g}_d{d}",
                  {"mechanism": mech, "calibration": "correct", "epsilon": eps, "dim": d, "k": 1, "encodings": 1,
                   "noise_reading": noise, "delta": 1e-5, "clip": 1.0, "draws": o["draws"], "seed": o["seed"]})
            for mech, eps, d in READING_CASES for noise in ("per-encoding", "per-batch")]


def _reading_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.privacy_audit.mechanism import max_certifiable_epsilon
    from ..attacks.privacy_audit.noise_reading import audit_noise_reading
    from ..mechanisms.dp import calibrate
    from ..rng import SecretGenerator
    from ..version import __version__

    s = point.settings
    cal = calibrate(s["mechanism"], epsilon=s["epsilon"], delta=s["delta"], clip=s["clip"], dim=s["dim"], k=s["k"],
                    epochs=s["encodings"], calibration=s["calibration"], noise=s["noise_reading"])
    r = audit_noise_reading(cal, noise=s["noise_reading"], draws=s["draws"], rng=SecretGenerator(s["seed"], warn=False))
    return {"kind": "dp-audit", "privnlu": __version__, "mechanism": s["mechanism"], "draws_per_hypothesis": s["draws"],
            "experiment_seed": s["seed"], "results": [r.to_json()], "violated": r.violated,
            "case": {k: s[k] for k in ("calibration", "epsilon", "dim", "k", "encodings", "noise_reading", "delta", "clip")},
            "largest_certifiable_epsilon": {"delta0": max_certifiable_epsilon(s["draws"] // 2),
                                            "delta1e-5": max_certifiable_epsilon(s["draws"] // 2, 1e-5)}}


register(Recipe(
    "xie2022-noise-reading-audit", PAPER, "noise-reading-audit",
    "Beyond the paper: Algorithm 1's noise drawn once per batch (as printed) against fresh noise per encoding, "
    "checked by telling two neighbouring batches apart from the difference of their two encodings (a 95 % lower "
    "bound on epsilon beside the claim)",
    {"draws": 5_000, "seed": 0},
    _reading_points, _reading_run,
    lambda r: {"mechanism": r["mechanism"], **r["case"], "draws": r["draws_per_hypothesis"], "seed": r["experiment_seed"]}))

# old recipe names, accepted for one release
ALIASES.update({"xie2022-figure2-attack": "xie2022-figure2", "xie2022-figure1-clean-queries": "xie2022-figure1"})
