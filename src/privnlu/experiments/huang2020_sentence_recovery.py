"""Recipe (beyond the paper, filed under TextHide): whole sentences recovered from federated joint-mode client
messages by the DAGER-class span inversion (:mod:`privnlu.attacks.gradient.dager`), with the frozen embedding tables of
privnlu's default, without and with TextHide, per batch size; plus where it stops (token slots against the
hidden size, the client's dropout, local noise)."""

from __future__ import annotations

import time

from .registry import Point, Recipe, RunContext, register

PAPER = "huang2020"


def _settings(o: dict, b: int, schemes: tuple[str, ...], dropout: str, noise: float) -> dict:
    return {"task": o["task"], "batch_size": b, "trials": o["trials"], "schemes": list(schemes), "dropout": dropout,
            "noise": noise, "max_seconds": o["max_seconds"], "train_limit": o["train_limit"], "seed": o["seed"]}


def _points(o: dict) -> list[Point]:
    pts = [Point(f"sentence_recovery_b{b}", _settings(o, b, tuple(o["schemes"]), "off", 0.0)) for b in o["batch_sizes"]]
    pts += [Point(f"limit_b{b}", _settings(o, b, ("none",), "off", 0.0)) for b in o["limit_batch_sizes"]]
    pts.append(Point("dropout_b1", _settings(o, 1, ("none",), "on", 0.0)))
    pts += [Point(f"noise_{z:g}_b1", _settings(o, 1, ("none",), "off", float(z))) for z in o["noise"]]
    return pts


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.gradient.dager.measure import measure
    from ..attacks.threat import SPAN_INVERSION_THREAT
    from ..federated.config import FederatedConfig
    from ..paper_values import lookup
    from ..schemes import get

    torch.set_num_threads(1)
    t0 = time.time()
    s, results = point.settings, []
    for scheme in s["schemes"]:
        th = dict(m="16", k=min(4, s["batch_size"])) if get(scheme).private else dict(m="0", k=1)
        cfg = FederatedConfig(task=s["task"], model="", clients=2, rounds=1, batch_size=s["batch_size"], mode="joint",
                              scheme=scheme, train_limit=s["train_limit"], dev_limit=8, seed=s["seed"],
                              eval_mask="none", **th)
        results.append(measure(cfg, trials=s["trials"], dropout=s["dropout"], noise=s["noise"],
                               max_seconds=s["max_seconds"], seed=s["seed"]))
    paper = [v.__dict__ for b in (1, 4) for c in ("ROUGE-1", "ROUGE-2")
             if (v := lookup("petrov2024", "BERT-base, SST-2", f"B={b}", c)) is not None]
    return {"kind": "sentence_recovery", "task": s["task"], "settings": s, "results": results,
            "threat_model": SPAN_INVERSION_THREAT.to_json(), "paper": paper, "seconds": round(time.time() - t0, 1)}


register(Recipe(
    "huang2020-federated-sentence-recovery", PAPER, "federated-sentence-recovery",
    "Beyond the paper: whole sentences recovered from federated joint-mode client messages (frozen embedding "
    "tables, the default) by a DAGER-class span inversion, per batch size, without and with TextHide, and its limits",
    {"task": "sst2", "batch_sizes": (1, 4, 8, 16), "limit_batch_sizes": (32, 64), "noise": (0.001,), "trials": 3,
     "max_seconds": 45.0, "train_limit": 512, "seed": 0, "schemes": ("none", "texthide")},
    _points, _run, lambda r: r["settings"]))
