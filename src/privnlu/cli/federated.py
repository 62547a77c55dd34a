"""``privnlu federated``: federated training under TextHide on Flower (in-process simulation, or a deployment)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..params import POS_INT, Option, Range
from .common import say, scheme_from_args, warn_seed
from .options import add, scheme_options

I, F = int, float
FEDERATION = (
    Option("clients", "--clients", "number of clients", I, default=4, range=POS_INT, group="federation"),
    Option("rounds", "--rounds", "federated rounds", I, default=50, range=POS_INT, group="federation"),
    Option("algorithm", "--algorithm", "fedsgd: clients send one gradient per round (Algorithm 2); fedavg: weights "
           "after local steps", default="fedsgd", choices=("fedsgd", "fedavg"), group="federation"),
    Option("local_steps", "--local-steps", "client steps per round with fedavg", I, default=1, range=POS_INT,
           group="federation"),
    Option("fraction_train", "--fraction-train", "fraction of clients sampled each round", F, default=1.0,
           range=Range(lo=0, hi=1, lo_open=True), group="federation"),
    Option("min_clients", "--min-clients", "Flower's minimum available clients before a round starts", I, default=0,
           range=Range(lo=0, integer=True, note="0 = all clients"), group="federation"),
    Option("round_timeout", "--round-timeout", "seconds to wait for replies each round", F, default=600.0,
           range=Range(lo=0, lo_open=True, hi=1e7), group="federation"),
    Option("backend", "--backend", "ray: Flower's Simulation Runtime, one Ray actor per client; inprocess: the same "
           "ServerApp loop and ClientApps in this process, no Ray (lighter, for long runs on few cores)",
           default="ray", choices=("ray", "inprocess"), group="federation"),
    Option("pool_sizes", "--pool-sizes", "explicit per-client pool sizes, comma-separated, summing to m", default="",
           range=Range(lo=1, integer=True, items=True, empty_ok=True, note="empty = an even split"), group="scheme"),
    Option("server_optimizer", "--server-optimizer", "server optimizer (fedsgd)", default="adam",
           choices=("adam", "sgd"), group="training"),
    Option("train_embeddings", "--train-embeddings", "joint mode: also train the word/position/token-type embedding "
           "tables. UNSAFE: their gradient rows are non-zero exactly at the batch's token ids, so every client sends "
           "its words to the server (default: the tables stay frozen on the clients)", kind="flag", group="training"),
    Option("eval_every", "--eval-every", "evaluate the global model every N rounds", I, default=1, range=POS_INT,
           group="training"),
    Option("checkpoint_every", "--checkpoint-every", "checkpoint every N rounds (always at the end)", I, default=0,
           range=Range(lo=0, integer=True, note="0 = only at the end"), group="training"),
    Option("fed_dp_clip", "--dp-clip", "clip each client's gradient to L2 norm C on the server and add Gaussian "
           "noise: client-level DP-FedSGD (fedsgd only)", F, default=0.0, metavar="C",
           range=Range(lo=0, hi=1e12, note="0 = no DP"), group="differential privacy"),
    Option("dp_noise_multiplier", "--dp-noise-multiplier", "noise std = Z * C on the sum", F, default=0.0,
           metavar="Z", range=Range(lo=0, hi=1e6, note="0 = off"), group="differential privacy"),
    Option("fed_dp_epsilon", "--dp-epsilon", "instead of --dp-noise-multiplier: calibrate Z so that all --rounds are "
           "(epsilon, delta)-DP", F, default=0.0, range=Range(lo=0, hi=1000.0, note="0 = use --dp-noise-multiplier"),
           group="differential privacy"),
    Option("secagg", "--secagg", "secure aggregation (fedsgd, --backend inprocess): clients send pairwise-masked "
           "gradients and the server sees only their sum (privnlu's in-process masking, not Flower's SecAgg+)",
           kind="flag", group="client-side protection"),
    Option("local_clip", "--local-clip", "each client clips its gradient to L2 norm C before sending (with "
           "--local-noise)", F, default=0.0, metavar="C", range=Range(lo=0, hi=1e12, note="0 = no local clipping"),
           group="client-side protection"),
    Option("local_noise", "--local-noise", "each client adds N(0, (Z*C)^2) to every coordinate it sends", F,
           default=0.0, metavar="Z", range=Range(lo=0, hi=1e6, note="0 = no local noise"),
           group="client-side protection"),
    Option("record_wire", "--record-wire", "save every message of the first N rounds to <out>/wire.safetensors (the "
           "eavesdropper's view)", I, default=0, metavar="N", range=Range(lo=0, integer=True, extra=(-1,),
                                                                        note="-1 = every round, 0 = none")),
    Option("verbose", "--verbose", "show Flower's log", kind="flag"),
    Option("deploy", "--deploy", "submit to a running Flower SuperLink instead of simulating", kind="flag",
           group="deployment"),
    Option("superlink", "--superlink", "the SuperLink's Control API address for --deploy (e.g. 127.0.0.1:9093)",
           default="", metavar="HOST:PORT", group="deployment"),
    Option("app_dir", "--app-dir", "where --deploy writes the Flower app (default: <out>/flower_app)", writes="dir",
           group="deployment"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "federated", help="federated training with TextHide on Flower (FedSGD / FedAvg)",
        description="Federated TextHide (Huang et al. 2020, Algorithm 2) on Flower. By default runs Flower's "
                    "in-process Simulation Runtime with --clients virtual clients; with --deploy, submits the same "
                    "apps to a running SuperLink (`flwr run`). Writes <out>/result.json (kind 'federated').")
    scheme, *params = scheme_options("none", "per-batch")
    add(p, "task", "data_dir", "train_limit", "dev_limit", "model", "pooling", "max_length", "cache_dir",
        scheme.but(default="texthide", help="privacy scheme of the clients: none or texthide"),
        *[o for o in params if o.dest in ("m", "k")], *FEDERATION, "mode", "batch_size", "lr", "encoder_lr", "hidden",
        "dropout", "abs_input", "eval_mask", "seed", "dp_delta", "out", "resume",
        task={"required": True}, pooling={"default": "cls"},
        lr={"help": "server (fedsgd) or client (fedavg) learning rate"},
        batch_size={"help": "hidden batch per client and step"},
        dp_delta={"help": "delta of the client-level DP guarantee", "group": "differential privacy"},
        eval_mask={"help": "pool: clients also score the global model on their dev shard masked with their own pool "
                           "(federated evaluation); none: only the server's unmasked dev score"},
        out={"help": "run folder (default: runs/federated/<label>)", "writes": "dir", "check": "runs/federated"},
        resume={"help": "continue from the run folder's checkpoint"})
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace):
    from ..federated.config import FederatedConfig

    scheme = scheme_from_args(args)
    point = scheme.params() if scheme.release != "none" else {"m": "0", "k": 1}
    return FederatedConfig(
        task=args.task, clients=args.clients, rounds=args.rounds, m=str(point["m"]), k=int(point["k"]),
        pool_sizes=args.pool_sizes, scheme=scheme.name, algorithm=args.algorithm, local_steps=args.local_steps,
        batch_size=args.batch_size, lr=args.lr, server_optimizer=args.server_optimizer, mode=args.mode,
        encoder_lr=args.encoder_lr, train_embeddings=args.train_embeddings, model=args.model or "",
        pooling=args.pooling, max_length=args.max_length, hidden=",".join(map(str, args.hidden or ())),
        dropout=args.dropout, train_limit=args.train_limit or 0, dev_limit=args.dev_limit or 0,
        data_dir=args.data_dir or "", cache_dir=args.cache_dir or "", fraction_train=args.fraction_train,
        min_clients=args.min_clients, eval_every=args.eval_every, eval_mask=args.eval_mask,
        checkpoint_every=args.checkpoint_every, seed=-1 if args.seed is None else args.seed,
        abs_input=args.abs_input, dp_clip=args.fed_dp_clip, dp_noise=args.dp_noise_multiplier,
        dp_epsilon=args.fed_dp_epsilon, dp_delta=args.dp_delta, secagg=args.secagg, local_clip=args.local_clip,
        local_noise=args.local_noise)


def run(args: argparse.Namespace) -> int:
    from ..federated.launch import launch

    warn_seed(args)
    cfg = config_from_args(args)
    out = Path(args.out) if args.out else None
    rec = launch(cfg, out=out, backend=args.backend, deploy=args.deploy, superlink=args.superlink,
                 app_dir=Path(args.app_dir) if args.app_dir else None, resume=args.resume,
                 record_wire=args.record_wire, round_timeout=args.round_timeout, verbose=args.verbose, log=say)
    if rec.get("kind") == "deployment":
        return int(rec["returncode"])
    split = next(iter(rec["eval"]))
    say(f"{rec['label']}: {rec['metric']} score {rec['score']:.2f} on {split} ({rec['score_source']}) after "
        f"{cfg.rounds} rounds (best {rec['best_score']:.2f}; server, unmasked: {rec['server_score']:.2f}); "
        f"results in {out or Path('runs/federated') / cfg.label}"
        + (f"; client-level ({rec['dp']['epsilon']:.3g}, {rec['dp']['delta']:g})-DP" if "dp" in rec else ""))
    return 0
