"""``privnlu federated``: federated TextHide on Flower (in-process simulation, or a real deployment)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import PrivnluError
from .common import add_data_args, add_model_args, m_value, positive_int, say, warn_seed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "federated", help="federated training with TextHide on Flower (FedSGD / FedAvg)",
        description="Federated TextHide (Huang et al. 2020, Algorithm 2) on Flower. By default runs Flower's "
                    "in-process Simulation Runtime with --clients virtual clients; with --deploy, submits the "
                    "same apps to a running SuperLink (`flwr run`). Writes <out>/result.json (kind 'federated').")
    add_data_args(p)
    add_model_args(p)
    # Flower run configs carry scalars only: keep non-None defaults for what the clients read
    p.set_defaults(data_dir="", train_limit=0, dev_limit=0, model="", cache_dir="")
    g = p.add_argument_group("federation")
    g.add_argument("--clients", type=int, default=4, help="number of clients (default: 4)")
    g.add_argument("--rounds", type=int, default=50, help="federated rounds (default: 50)")
    g.add_argument("--algorithm", default="fedsgd", choices=["fedsgd", "fedavg"],
                   help="fedsgd: clients send one gradient per round (Algorithm 2); fedavg: weights after local steps")
    g.add_argument("--local-steps", type=positive_int, default=1, help="client steps per round with fedavg")
    g.add_argument("--fraction-train", type=float, default=1.0, help="fraction of clients sampled each round")
    g.add_argument("--min-clients", type=int, default=0,
                   help="Flower's minimum available clients before a round starts (default: all)")
    g.add_argument("--round-timeout", type=float, default=600.0, help="seconds to wait for replies each round")
    g.add_argument("--backend", default="ray", choices=["ray", "inprocess"],
                   help="ray (default): Flower's Simulation Runtime, one Ray actor per client; inprocess: the same "
                        "ServerApp loop and ClientApps called in this process, no Ray (lighter, for long runs on "
                        "few cores)")
    g = p.add_argument_group("TextHide")
    g.add_argument("--scheme", default="texthide", choices=["none", "texthide"])
    g.add_argument("--m", type=m_value, default=None, help="total pool size, split over the clients (default: 256)")
    g.add_argument("--k", type=int, default=None, help="representations mixed per encoding (default: 4)")
    g.add_argument("--pool-sizes", default="", help="explicit per-client pool sizes, comma-separated, summing to m")
    g = p.add_argument_group("training")
    g.add_argument("--mode", default="frozen", choices=["frozen", "joint"])
    g.add_argument("--batch-size", type=positive_int, default=64, help="hidden batch per client and step")
    g.add_argument("--lr", type=float, default=1e-3, help="server (fedsgd) or client (fedavg) learning rate")
    g.add_argument("--server-optimizer", default="adam", choices=["adam", "sgd"])
    g.add_argument("--encoder-lr", type=float, default=2e-5)
    g.add_argument("--train-embeddings", action="store_true",
                   help="joint mode: also train the word/position/token-type embedding tables. UNSAFE: their gradient "
                        "rows are non-zero exactly at the batch's token ids, so every client sends its words to the "
                        "server (default: the tables stay frozen on the clients and never go on the wire)")
    g.add_argument("--hidden", default="", help="head hidden sizes, e.g. 384,384,384 (default: d,d,d)")
    g.add_argument("--dropout", type=float, default=0.1)
    g.add_argument("--abs-input", action="store_true",
                   help="the head sees |x| (mask-invariant: needs no key, which shows how little the masks hide)")
    g.add_argument("--eval-every", type=int, default=1, help="evaluate the global model every N rounds")
    g.add_argument("--eval-mask", default="pool", choices=["none", "pool"],
                   help="pool (default): clients also score the global model on their dev shard masked with their own "
                        "pool (federated evaluation); none: only the server's unmasked dev score")
    g.add_argument("--checkpoint-every", type=int, default=0, help="checkpoint every N rounds (always at the end)")
    g.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every client's secrets reproducible")
    g = p.add_argument_group("differential privacy (client-level DP-FedSGD, see docs/federated.md)")
    g.add_argument("--dp-clip", type=float, default=0.0, metavar="C",
                   help="clip each client's gradient to L2 norm C on the server and add Gaussian noise (fedsgd only)")
    g.add_argument("--dp-noise-multiplier", type=float, default=0.0, metavar="Z", help="noise std = Z * C on the sum")
    g.add_argument("--dp-epsilon", type=float, default=0.0,
                   help="instead of --dp-noise-multiplier: calibrate Z so that all --rounds are (epsilon, delta)-DP")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="delta of the DP guarantee (default: 1e-5)")
    g = p.add_argument_group("client-side protection of the messages (see docs/federated.md)")
    g.add_argument("--secagg", action="store_true",
                   help="secure aggregation (fedsgd, --backend inprocess): clients send pairwise-masked gradients and "
                        "the server sees only their sum (privnlu's in-process masking, not Flower's SecAgg+ workflow)")
    g.add_argument("--local-clip", type=float, default=0.0, metavar="C",
                   help="each client clips its gradient to L2 norm C before sending (with --local-noise)")
    g.add_argument("--local-noise", type=float, default=0.0, metavar="Z",
                   help="each client adds N(0, (Z*C)^2) to every coordinate it sends (dense, from the OS CSPRNG)")
    g = p.add_argument_group("output")
    g.add_argument("--out", help="run folder (default: runs/federated/<label>)")
    g.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    g.add_argument("--record-wire", type=int, default=0, metavar="N",
                   help="save every message of the first N rounds (-1: all) to <out>/wire.safetensors (the eavesdropper's view)")
    g.add_argument("--verbose", action="store_true", help="show Flower's log")
    g = p.add_argument_group("deployment")
    g.add_argument("--deploy", action="store_true",
                   help="submit to a running Flower SuperLink instead of simulating (see docs/federated.md)")
    g.add_argument("--superlink", default="", metavar="HOST:PORT",
                   help="the SuperLink's Control API address for --deploy (e.g. 127.0.0.1:9093)")
    g.add_argument("--app-dir", help="where --deploy writes the Flower app (default: <out>/flower_app)")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace):
    from ..federated.config import FederatedConfig

    if args.scheme == "texthide":
        m = "256" if args.m is None else args.m
        k = 4 if args.k is None else args.k
    else:
        m, k = (0 if args.m is None else args.m), (1 if args.k is None else args.k)
    from ..mechanisms.texthide import m_label

    return FederatedConfig(
        task=args.task, clients=args.clients, rounds=args.rounds, m=m_label(float(m)) if not isinstance(m, str) else m,
        k=k, pool_sizes=args.pool_sizes, scheme=args.scheme, algorithm=args.algorithm, local_steps=args.local_steps,
        batch_size=args.batch_size, lr=args.lr, server_optimizer=args.server_optimizer, mode=args.mode,
        encoder_lr=args.encoder_lr, train_embeddings=args.train_embeddings, model=args.model, pooling=args.pooling, max_length=args.max_length,
        hidden=args.hidden, dropout=args.dropout, train_limit=args.train_limit, dev_limit=args.dev_limit,
        data_dir=args.data_dir, cache_dir=args.cache_dir, fraction_train=args.fraction_train,
        min_clients=args.min_clients, eval_every=args.eval_every, eval_mask=args.eval_mask, checkpoint_every=args.checkpoint_every,
        seed=-1 if args.seed is None else args.seed, abs_input=args.abs_input, dp_clip=args.dp_clip,
        dp_noise=args.dp_noise_multiplier, dp_epsilon=args.dp_epsilon, dp_delta=args.dp_delta,
        secagg=args.secagg, local_clip=args.local_clip, local_noise=args.local_noise,
    )


UNSUPPORTED = {"train_file": "--train-file/--dev-file (clients load the task by name; register a task instead)",
               "bf16": "--bf16", "refresh_cache": "--refresh-cache"}


def check_supported(args: argparse.Namespace) -> None:
    """The shared data/encoder options privnlu federated does not take: one line, exit 2."""
    for name, flag in UNSUPPORTED.items():
        if getattr(args, name, None):
            raise PrivnluError(f"privnlu federated does not support {flag}")
    if getattr(args, "dev_file", None) or getattr(args, "regression", False):
        raise PrivnluError("privnlu federated does not support --dev-file/--regression (it runs registered tasks)")
    if getattr(args, "device", "cpu") != "cpu":
        raise PrivnluError("privnlu federated runs its clients on the CPU; drop --device")


def run(args: argparse.Namespace) -> int:
    warn_seed(args)
    check_supported(args)
    if args.deploy and not args.superlink:
        raise PrivnluError("--deploy needs the SuperLink address: --superlink HOST:PORT (its Control API, e.g. 127.0.0.1:9093)")
    if args.superlink and not args.deploy:
        raise PrivnluError("--superlink is for --deploy; without --deploy privnlu runs the in-process simulation")
    if not args.round_timeout > 0:
        raise PrivnluError(f"--round-timeout must be positive, not {args.round_timeout}")
    cfg = config_from_args(args)
    if cfg.secagg and (args.deploy or args.backend != "inprocess"):
        raise PrivnluError("--secagg needs --backend inprocess (privnlu deals the pairwise mask seeds to in-process "
                           "clients; Flower's SecAgg+ workflow is not wired in)")
    if cfg.train_embeddings:
        from ..federated.model import EMBEDDING_LEAK_WARNING

        say(f"WARNING: {EMBEDDING_LEAK_WARNING}")
    label = f"{cfg.task}-{cfg.algorithm}-{'baseline' if cfg.scheme == 'none' else f'm{cfg.m}-k{cfg.k}'}-c{cfg.clients}"
    out = Path(args.out) if args.out else Path("runs/federated") / label
    if args.deploy:
        from ..federated.deploy import deploy

        return deploy(cfg, out=out, superlink=args.superlink, app_dir=Path(args.app_dir) if args.app_dir else None,
                      resume=args.resume, record_wire=args.record_wire, round_timeout=args.round_timeout)
    from ..federated.simulation import preflight, run_inprocess, run_simulation
    from ..federated.wire import WireLog

    preflight(cfg)
    wire = WireLog(args.record_wire) if args.record_wire else None
    say(f"privnlu federated: {cfg.clients} clients, {cfg.rounds} rounds, {cfg.algorithm}, "
        f"{'no TextHide' if cfg.scheme == 'none' else f'(m, k) = ({cfg.m}, {cfg.k})'}"
        f"{f', DP-FedSGD z = {cfg.dp_noise_multiplier:.4g}' if cfg.dp_clip else ''}"
        f"{', secure aggregation' if cfg.secagg else ''}"
        f"{f', local noise z = {cfg.local_noise:g} (C = {cfg.local_clip:g})' if cfg.local_noise else ''}; "
        f"{'in-process clients' if args.backend == 'inprocess' else 'starting Flower simulation'}")
    if args.backend == "inprocess":
        rec = run_inprocess(cfg, out=out, resume=args.resume, wire=wire, round_timeout=args.round_timeout, checked=True,
                            verbose=args.verbose)
    else:
        rec = run_simulation(cfg, out=out, resume=args.resume, wire=wire, round_timeout=args.round_timeout,
                             verbose=args.verbose, checked=True)
    split = next(iter(rec["eval"]))
    say(f"{rec['label']}: {rec['metric']} score {rec['score']:.2f} on {split} ({rec['score_source']}) after "
        f"{cfg.rounds} rounds (best {rec['best_score']:.2f}; server, unmasked: {rec['server_score']:.2f}); "
        f"results in {out / 'result.json'}"
        + (f"; client-level ({rec['dp']['epsilon']:.3g}, {rec['dp']['delta']:g})-DP" if "dp" in rec else ""))
    return 0
