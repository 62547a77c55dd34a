"""Recipes beyond Xie & Hong 2022: DP-SGD, the alternative the paper positions DP instance encoding against
(Sections 1 and 2.4: DP-SGD "could cause great accuracy loss").

* ``xie2022-dp-sgd``: the encoder (packaged MiniLM) and head fine-tuned jointly with DP-SGD (Opacus, PRV accountant,
  Poisson sampling, per-example clipping, ghost clipping) on SST-2 at CPU scale, at epsilon 1, 3 and 8, beside
  non-private fine-tuning at the same budget: the same examples, epochs and (expected) batch size. Each side keeps
  its own learning rates; DP-SGD fine-tuned runs at two pairs, the large rates of Li et al. 2022 and the
  non-private encoder rate with the frozen head's (``--lrs`` and ``--encoder-lrs`` set other pairs; runs not at the
  first pair are named by their rates); the records state them.
  ``--mode frozen`` trains only the head on the frozen encoder's representations (``--epochs 20``: a head needs
  more passes than a fine-tuned encoder).
* ``xie2022-dp-sgd-audit``: the one-run empirical audit (Steinke et al. 2023) of DP-SGD, sound runs beside a
  deliberately under-noised one that must be caught (:mod:`privnlu.attacks.privacy_audit.dp_sgd`).
"""

from __future__ import annotations

from dataclasses import replace

from .registry import Point, Recipe, RunContext, register

PAPER = "xie2022"
GROUP = "xie2022-dp-sgd"
EPSILONS = (1.0, 3.0, 8.0)
#: DP-SGD's (head lr, encoder lr) pairs by mode: fine-tuned, the large rates of Li et al. 2022, then the
#: non-private encoder rate with the frozen head's rate; frozen, the audit's DP-SGD head rate (the encoder rate is
#: unused). Non-private training keeps CLEAR_LRS (the cpu scale's).
PRIVATE_LRS = {"joint": ((1e-3, 5e-4), (1e-2, 5e-5)), "frozen": ((1e-2, 5e-4),)}
CLEAR_LRS = (1e-3, 5e-5)


def _specs(o: dict) -> list:
    from ..schemes import NoPrivacy, create
    from ..training import TrainConfig
    from ..training.engine import RunSpec

    out = []
    for task in o["tasks"]:
        base = RunSpec(task=task, model=o["model"], mode=o["mode"], train_limit=o["train_limit"], max_length=128,
                       train=TrainConfig(epochs=o["epochs"], batch_size=o["batch_size"], seed=o["seed"]))
        out.append(replace(base, scheme=NoPrivacy(), encoder_lr=CLEAR_LRS[1], train=replace(base.train, lr=CLEAR_LRS[0])))
        for head_lr, enc_lr in _private_lrs(o):
            for eps in o["epsilons"]:
                out.append(replace(base, scheme=create("dp-sgd", epsilon=eps), encoder_lr=enc_lr,
                                   train=replace(base.train, lr=head_lr)))
    return out


def _private_lrs(o: dict) -> tuple[tuple[float, float], ...]:
    """DP-SGD's (head, encoder) learning-rate pairs: ``--lrs`` and ``--encoder-lrs`` paired in order, else the
    mode's."""
    if not (o["lrs"] or o["encoder_lrs"]):
        return PRIVATE_LRS[o["mode"]]
    first = PRIVATE_LRS[o["mode"]][0]
    heads, encs = tuple(o["lrs"] or (first[0],)), tuple(o["encoder_lrs"] or (first[1],))
    return tuple((heads[min(i, len(heads) - 1)], encs[min(i, len(encs) - 1)])
                 for i in range(max(len(heads), len(encs))))


def _name(o: dict, spec) -> str:
    """``<task>-<scheme label>-<mode>``; DP-SGD runs at other than the mode's first rates say which."""
    rates = (spec.train.lr, spec.encoder_lr)
    other = spec.scheme.private_training() is not None and rates != PRIVATE_LRS[o["mode"]][0]
    return f"{spec.label}-{spec.mode}" + (f"-lr{rates[0]:g}-enc{rates[1]:g}" if other else "")


def _settings(spec_json: dict) -> dict:
    drop = ("cache_dir", "data_dir", "device", "encode_batch_size", "bf16", "public_size", "public")
    return {k: v for k, v in spec_json.items() if k not in drop}


def _points(o: dict) -> list[Point]:
    return [Point(_name(o, s), {"spec": _settings(s.to_json())}) for s in _specs(o)]


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..training.engine import prepare, train_run
    from ..training.selection import majority

    spec = next(s for s in _specs(o) if {"spec": _settings(s.to_json())} == point.settings)
    spec = replace(spec, data_dir=ctx.data_dir, cache_dir=ctx.cache_dir, device=ctx.device)
    prep = prepare(spec, progress=ctx.progress)
    rec = train_run(spec, prep, out=ctx.scratch, progress=ctx.progress, group=GROUP)
    return {**rec, "majority": majority(prep)}


register(Recipe(
    "xie2022-dp-sgd", PAPER, "dp-sgd",
    "Beyond the paper: DP-SGD (Opacus) fine-tuning of the encoder and head at epsilon 1, 3, 8 beside non-private "
    "fine-tuning at the same budget, on SST-2 at CPU scale",
    {"tasks": ("sst2",), "mode": "joint", "epsilons": EPSILONS, "train_limit": 5000, "epochs": 2, "batch_size": 128,
     "lrs": None, "encoder_lrs": None, "model": None, "seed": 0},
    _points, _run, lambda r: {"spec": _settings(r["spec"])},
    variant=lambda o: "" if tuple(o["tasks"]) == ("sst2",) and o["mode"] == "joint" else
    "-".join(list(o["tasks"]) + [o["mode"]])))


# -- the one-run empirical audit of DP-SGD (Steinke et al. 2023) -------------------------------------------------

#: (run name, under-noise factor): the sound run, and one with 1/20 of the calibrated noise that must be caught
AUDIT_RUNS = (("sound", None), ("under-noised-x20", 20.0))


def _audit_points(o: dict) -> list[Point]:
    return [Point(f"{o['task']}-{name}-seed{seed}",
                  {"task": o["task"], "under_noise": factor, "epsilon": 1.0, "delta": 1e-5, "canaries": 1000,
                   "train_limit": 2000, "epochs": 10, "lr": 0.01, "batch_size": 64, "clip": 1.0, "hidden": [128],
                   "accountant": "rdp", "seed": seed})
            for name, factor in AUDIT_RUNS for seed in o["seeds"]]


def _audit_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..attacks.privacy_audit.dp_sgd import audit_dp_sgd, task_features
    from ..training.dp_sgd import DPSGDConfig

    s = point.settings
    x, y, classes, source = task_features(s["task"], train_limit=s["train_limit"], data_dir=ctx.data_dir,
                                          model=o["model"], cache_dir=ctx.cache_dir, progress=ctx.progress)
    config = DPSGDConfig(epsilon=s["epsilon"], delta=s["delta"], clip=s["clip"], accountant=s["accountant"],
                         epochs=s["epochs"], batch_size=s["batch_size"], lr=s["lr"])
    rec = audit_dp_sgd(x, y, num_outputs=classes, config=config, canaries=s["canaries"], under_noise=s["under_noise"],
                       hidden=tuple(s["hidden"]), seed=s["seed"], source=source)
    return {**rec, "name": point.name, "settings": s}


register(Recipe(
    "xie2022-dp-sgd-audit", PAPER, "dp-sgd-audit",
    "Beyond the paper: the one-run empirical audit (Steinke et al. 2023) of DP-SGD heads on the packaged tweets, a "
    "sound run and one with 1/20 of the calibrated noise, claim (1, 1e-5), 1,000 canaries",
    {"task": "tweets", "seeds": (0, 1), "model": None},
    _audit_points, _audit_run, lambda r: r["settings"]))
