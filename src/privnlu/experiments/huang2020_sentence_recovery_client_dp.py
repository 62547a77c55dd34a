"""Recipe (beyond the paper, filed under TextHide): the DAGER-class span inversion on the messages of a federated
joint-mode client that trains with client-side DP-SGD (:mod:`privnlu.federated.client_dp`), per target epsilon and
batch size, against the same client without DP-SGD (the reference) and with DP-SGD's sampling and clipping but no
noise (a diagnostic that separates the noise from the rest of DP-SGD). Each client's noise is calibrated for a run
of ``rounds`` rounds; the attack reads client 0's messages of rounds ``1..trials`` on the global model ``W_0``. The
client encoder's dropout is off (exact inversion assumes none: the attacker's best case)."""

from __future__ import annotations

import time

from .registry import Point, Recipe, RunContext, pick, register

PAPER = "huang2020"
NAME = "huang2020-federated-sentence-recovery-client-dp"
KEYS = ("task", "clients", "rounds", "clip", "trials", "max_seconds", "train_limit", "seed")


def _points(o: dict) -> list[Point]:
    pts = []
    for b in o["batch_sizes"]:
        base = {**pick(o, *KEYS), "batch_size": b}
        pts.append(Point(f"non_private_b{b}", {**base, "epsilon": 0.0, "noise_multiplier": None}))
        pts.append(Point(f"clip_only_b{b}", {**base, "epsilon": float(max(o["epsilons"])), "noise_multiplier": 0.0}))
        pts += [Point(f"client_dp_eps{e:g}_b{b}", {**base, "epsilon": float(e), "noise_multiplier": None})
                for e in sorted(o["epsilons"], reverse=True)]
    return pts


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..attacks.gradient.dager.measure import measure
    from ..attacks.threat import SPAN_INVERSION_THREAT
    from ..federated.client_dp import plan_client, shard_sizes
    from ..federated.config import FederatedConfig

    torch.set_num_threads(1)
    t0 = time.time()
    s = point.settings
    cfg = FederatedConfig(task=s["task"], model="", clients=s["clients"], rounds=s["rounds"],
                          batch_size=s["batch_size"], mode="joint", scheme="none", m="0", k=1,
                          train_limit=s["train_limit"], dev_limit=8, seed=s["seed"], eval_mask="none",
                          client_dp_epsilon=s["epsilon"], client_dp_clip=s["clip"],
                          data_dir=ctx.data_dir or "", cache_dir=ctx.cache_dir or "")
    res = measure(cfg, trials=s["trials"], dropout="off", max_seconds=s["max_seconds"], seed=s["seed"],
                  client_dp_noise=s["noise_multiplier"])
    out = {"kind": "sentence_recovery_client_dp", "task": s["task"], "settings": s, "results": [res],
           "threat_model": SPAN_INVERSION_THREAT.to_json()}
    if s["epsilon"]:
        plan = plan_client(cfg, 0, shard_sizes(s["train_limit"], s["clients"])[0])
        if s["noise_multiplier"] is not None:  # the diagnostic: no guarantee holds
            out["plan"] = {**plan.to_json(), "noise_multiplier": s["noise_multiplier"], "epsilon": None}
        else:
            out["plan"] = plan.to_json()
    out["seconds"] = round(time.time() - t0, 1)
    return out


register(Recipe(
    NAME, PAPER, "federated-sentence-recovery-client-dp",
    "Beyond the paper: whole sentences recovered by a DAGER-class span inversion from the messages of a federated "
    "joint-mode client training with client-side DP-SGD, per epsilon and batch size, against the non-private client "
    "and DP-SGD without noise",
    {"task": "sst2", "batch_sizes": (1, 4), "epsilons": (8.0, 3.0, 1.0), "clients": 2, "rounds": 100, "clip": 1.0,
     "trials": 8, "max_seconds": 30.0, "train_limit": 512, "seed": 0},
    _points, _run, lambda r: r["settings"]))
