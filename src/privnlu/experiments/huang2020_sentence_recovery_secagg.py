"""Recipe (beyond the paper, filed under TextHide): the DAGER-class span inversion on what a SecAgg+ server sees,
the decoded aggregate of N clients' joint-mode FedSGD messages, per number of clients and batch size (so per token
slots in the round): exactly summed (the attacker's best case) and as SecAgg+ decodes it (quantized). The clients'
encoder dropout is off (exact inversion assumes none: the attacker's best case)."""

from __future__ import annotations

import time

from .registry import Point, Recipe, RunContext, register

PAPER = "huang2020"
NAME = "huang2020-federated-sentence-recovery-secagg"


def _points(o: dict) -> list[Point]:
    keys = ("task", "trials", "max_seconds", "train_limit", "max_length", "seed")
    return [Point(f"aggregate_c{n}_b{b}", {**{k: o[k] for k in keys}, "clients": n, "batch_size": b})
            for b in o["batch_sizes"] for n in o["clients"]]


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.gradient.dager.secagg import measure_aggregate
    from ..attacks.threat import SPAN_INVERSION_THREAT
    from ..federated.config import FederatedConfig

    torch.set_num_threads(1)
    t0 = time.time()
    s = point.settings
    cfg = FederatedConfig(task=s["task"], model="", clients=s["clients"], rounds=1, batch_size=s["batch_size"],
                          mode="joint", scheme="none", m="0", k=1, train_limit=s["train_limit"], dev_limit=8,
                          max_length=s["max_length"], seed=s["seed"], eval_mask="none")
    results = [measure_aggregate(cfg, trials=s["trials"], quantized=q, max_seconds=s["max_seconds"], seed=s["seed"])
               for q in ((False, True) if s["clients"] >= 2 else (False,))]
    return {"kind": "sentence_recovery_secagg", "task": s["task"], "settings": s, "results": results,
            "threat_model": SPAN_INVERSION_THREAT.to_json(), "seconds": round(time.time() - t0, 1)}


register(Recipe(
    NAME, PAPER, "federated-sentence-recovery-secagg",
    "Beyond the paper: whole sentences recovered by a DAGER-class span inversion from what a SecAgg+ server sees "
    "(the aggregate of N clients' joint-mode messages), per number of clients and batch size, exact and quantized",
    {"task": "sst2", "clients": (1, 2, 4, 8), "batch_sizes": (1, 4, 64), "trials": 2, "max_seconds": 30.0,
     "train_limit": 1024, "max_length": 128, "seed": 0},
    _points, _run, lambda r: r["settings"]))
