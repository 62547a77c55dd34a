"""Recipe (beyond the paper, filed under TextHide): utility of federated training with client-side DP-SGD
(:mod:`privnlu.federated.client_dp`, sample-level (epsilon, delta)-DP of every client message) against the
non-private federated run at the same budget (rounds, clients, batch), frozen mode on SST-2."""

from __future__ import annotations

from .registry import Point, Recipe, RunContext, pick, register

PAPER = "huang2020"
KEYS = ("task", "clients", "rounds", "batch_size", "hidden", "lr", "clip", "train_limit", "eval_every", "seed")


def _name(eps: float) -> str:
    return f"client_dp_eps{eps:g}" if eps else "non_private"


def _points(o: dict) -> list[Point]:
    return [Point(_name(float(e)), {**pick(o, *KEYS), "epsilon": float(e)}) for e in (0, *o["epsilons"])]


def _settings(r: dict) -> dict:
    return r["settings"]


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    import torch

    from ..federated.config import FederatedConfig
    from ..federated.simulation import run_inprocess

    torch.set_num_threads(1)
    s = point.settings
    cfg = FederatedConfig(task=s["task"], model="", mode="frozen", scheme="none", m="0", k=1, clients=s["clients"],
                          rounds=s["rounds"], batch_size=s["batch_size"], hidden=s["hidden"], lr=s["lr"],
                          train_limit=s["train_limit"],
                          eval_every=s["eval_every"], eval_mask="none", seed=s["seed"], dropout=0.0,
                          client_dp_epsilon=s["epsilon"], client_dp_clip=s["clip"],
                          data_dir=ctx.data_dir or "", cache_dir=ctx.cache_dir or "")
    rec = run_inprocess(cfg, out=None)
    keep = ("label", "task", "metric", "eval", "score", "best_score", "server_score", "n_train", "seconds")
    out = {"kind": "federated_client_dp", "settings": s, **{k: rec[k] for k in keep},
           "history": [{k: h[k] for k in ("round", "eval") if k in h} for h in rec["history"] if "eval" in h]}
    if "client_dp" in rec:
        out["client_dp"] = rec["client_dp"]
        out["guarantee"] = rec["guarantee"]
    return out


register(Recipe(
    "huang2020-federated-client-dp-sgd", PAPER, "federated-client-dp-sgd",
    "Beyond the paper: federated frozen-mode training with client-side DP-SGD (every client message (epsilon, "
    "delta)-DP per example) at epsilon 3 and 8, against the non-private federated run at the same budget",
    {"task": "sst2", "epsilons": (3.0, 8.0), "clients": 4, "rounds": 200, "batch_size": 256, "hidden": "128",
     "lr": 1e-2, "clip": 0.1, "train_limit": 0, "eval_every": 50, "seed": 0},
    _points, _run, _settings))
