"""``privnlu federated``: federated training under TextHide on Flower (in-process simulation, or a deployment)."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from ..options import OPTIONS
from ..params import Option, Range, declared, given
from .common import say, scheme_from_args, warn_seed
from .options import add, scheme_options

#: how the run is started (not part of its settings)
LAUNCH = (
    Option("backend", "--backend", "ray: Flower's Simulation Runtime, one Ray actor per client; inprocess: the same "
           "ServerApp loop and ClientApps in this process, no Ray (lighter, for long runs on few cores)",
           default="ray", choices=("ray", "inprocess"), group="federation"),
    Option("round_timeout", "--round-timeout", "seconds to wait for replies each round", float, default=600.0,
           range=Range(lo=0, lo_open=True, hi=1e7), group="federation"),
    Option("record_wire", "--record-wire", "save every message of the first N rounds to <out>/wire.safetensors (the "
           "eavesdropper's view)", int, default=0, metavar="N", range=Range(lo=0, integer=True, extra=(-1,),
                                                                          note="-1 = every round, 0 = none")),
    Option("verbose", "--verbose", "show Flower's log", kind="flag"),
    Option("deploy", "--deploy", "submit to a running Flower SuperLink instead of simulating", kind="flag",
           group="deployment"),
    Option("superlink", "--superlink", "the SuperLink's Control API address for --deploy (e.g. 127.0.0.1:8000)",
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
    from ..federated.config import FederatedConfig

    scheme, *params = scheme_options("none", "per-batch")
    add(p, *declared(FederatedConfig), scheme.but(default="texthide", help="privacy scheme of the clients: none or "
                                                                           "texthide"),
        *[o for o in params if o.dest in ("m", "k")], "hidden", "seed", *LAUNCH, "out", "resume", "ledger",
        ledger={"help": "the owner's privacy ledger: each client's shard is a release of the training set, checked "
                        "against the budget before any work (--client-dp-epsilon: its accounted per-example DP)",
                "group": "privacy ledger"},
        out={"help": "run folder (default: runs/federated/<label>)", "writes": "dir", "check": "runs/federated"},
        pooling={"default": OPTIONS["pooling"].default},  # the library's cls keeps the recipes' records comparable
        resume={"help": "continue from the run folder's checkpoint"})
    p.add_argument("--local-noise", "--local-clip", dest="removed_local_noise", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace):
    from ..federated.config import FederatedConfig

    scheme = scheme_from_args(args)
    point = scheme.params() if scheme.private else {"m": "0", "k": 1}
    return FederatedConfig(**given(FederatedConfig, args), scheme=scheme.name, m=str(point["m"]), k=int(point["k"]),
                           hidden=",".join(map(str, args.hidden or ())), seed=-1 if args.seed is None else args.seed)


def run(args: argparse.Namespace) -> int:
    from ..errors import require
    from ..federated.launch import launch

    require(args.removed_local_noise is None, "--local-noise/--local-clip added noise with no accounting and are "
            "gone; use --client-dp-epsilon EPS (client-side DP-SGD, (EPS, delta)-DP per example)")
    warn_seed(args)
    cfg = config_from_args(args)
    out = Path(args.out) if args.out else None
    require(not (args.ledger and args.deploy), "--ledger records in-process runs; --deploy runs on the SuperLink")
    pending = []
    if args.ledger:
        from ..federated.client_dp import begin_releases

        pending = begin_releases(cfg, args.ledger, str((out or Path("runs/federated") / cfg.label) / "model"))
    with contextlib.ExitStack() as stack:  # a run that fails drops the pending releases
        for p in pending:
            stack.enter_context(p)
        rec = launch(cfg, out=out, backend=args.backend, deploy=args.deploy, superlink=args.superlink,
                     app_dir=Path(args.app_dir) if args.app_dir else None, resume=args.resume,
                     record_wire=args.record_wire, round_timeout=args.round_timeout, verbose=args.verbose, log=say)
    for p in pending:
        p.commit()
    if rec.get("kind") == "deployment":
        return int(rec["returncode"])
    split = next(iter(rec["eval"]))
    say(f"{rec['label']}: {rec['metric']} score {rec['score']:.2f} on {split} ({rec['score_source']}) after "
        f"{cfg.rounds} rounds (best {rec['best_score']:.2f}; server, unmasked: {rec['server_score']:.2f}); "
        f"results in {out or Path('runs/federated') / cfg.label}"
        + (f"; client-level ({rec['dp']['epsilon']:.3g}, {rec['dp']['delta']:g})-DP" if "dp" in rec else "")
        + (f"; per-example ({rec['client_dp']['epsilon']:.3g}, {rec['client_dp']['delta']:.2g})-DP on every client "
           "message" if "client_dp" in rec else ""))
    return 0
