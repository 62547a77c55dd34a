"""``privnlu attack gradient``: DLG against TextHide (Algorithm 3, Table 2), a sweep or a wire capture."""

from __future__ import annotations

import argparse

from ..params import NONNEG_INT, POS_INT, Option, Range, int_list
from .common import say
from .options import add

I = int
SWEEP_OUT = "runs/attacks/gradient_matching.json"


def register(sub: argparse._SubParsersAction) -> None:
    """``attack gradient`` (``sub``: the ``attack`` group's subcommands); its help and its ``--method`` choices come
    from the attack registry (:mod:`privnlu.attacks.registry`)."""
    from ..attacks.registry import commands, wire_methods

    methods = wire_methods()
    p = sub.add_parser(
        "gradient", help=commands()["gradient"].summary,
        description="Sweep: attack batch-size-1 gradients, d x k, with m = 1 (k = 0 is the no-TextHide baseline). "
                    "--victim hidden (default, the paper's): MiniLM representation -> non-linear layer -> hidden "
                    "layer of width d, masked -> head; --victim input: the representation projected to d and "
                    "masked directly. --wire: attack one client gradient from a capture written by "
                    "`privnlu federated --record-wire`.")
    add(p, "task", "data_dir", "cache_dir",
        Option("dims", "--dims", "projected dimensions d", int_list, default="4,16,64,256,1024",
               range=Range(lo=1, integer=True, items=True)),
        Option("ks", "--ks", "k values", int_list, default="0,1,2,4",
               range=Range(lo=0, integer=True, items=True, note="0 = no TextHide")),
        Option("trials", "--trials", "independent attacks per (d, k)", I, default=50, range=POS_INT),
        Option("iterations", "--iterations", "L-BFGS iterations in all", I, default=1200, range=POS_INT),
        "seed",
        Option("victim", "--victim", "sweep: hidden (the paper's, mask at a hidden layer of width d) or input (mask on "
               "the projected input)", default="hidden", choices=("hidden", "input")),
        "train_limit",
        Option("max_minutes", "--max-minutes", "sweep: start no new attack after this many minutes (the rounds are "
               "paired across cells, so a cut-short sweep stays balanced; --resume continues)", float,
               range=Range(lo=0, lo_open=True, hi=1e7)),
        Option("wire", "--wire", "attack a capture (<run>/wire.safetensors) instead of sweeping"),
        Option("round", "--round", "with --wire: the round to attack", I, default=1, range=POS_INT),
        Option("node", "--node", "with --wire: the client node id (default: the first reply)", I, range=NONNEG_INT),
        Option("no_mask", "--no-mask", "with --wire: the run used no TextHide mask", kind="flag"),
        Option("truth", "--truth", "with --wire: score the recovery against that (seeded, in-process) federated run "
               "(evaluation only: the attacker never reads it)", metavar="RUN_DIR"),
        Option("span_test", "--span-test", "with --wire: also run the first-layer span test (DAGER-style; needs no "
               "embedding gradient, so it applies to the frozen default)", kind="flag"),
        Option("method", "--method", "with --wire: " + " or ".join(f"{m} ({e.summary})" for m, e in methods.items()),
               default="tokens", choices=tuple(methods)),
        "model", "resume", "out",
        task={"default": "sst2", "help": "task whose cached train representations are attacked"},
        seed={"default": 0, "help": "experiment seed (trial choice, attacker init, victim keys)"},
        train_limit={"help": "sweep: attack examples among the first N training sentences only (default: all)"},
        model={"help": "with --wire: the encoder folder of the run, whose tokenizer names the recovered token ids "
                       "(default: the run's, or packaged MiniLM)", "group": ""},
        resume={"help": "continue an interrupted sweep from --out: finished attacks are kept, not re-run"},
        out={"help": f"results JSON (default: {SWEEP_OUT}; with --wire: "
                     "runs/attacks/wire_<run>_round<N>[_node<ID>].json)"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..attacks.gradient.matching import GradientMatchingConfig, run_sweep
    from ..attacks.gradient.wire import attack_wire
    from ..io import write_json_atomic

    if args.method == "span" and not args.wire:
        from ..errors import PrivnluError
        raise PrivnluError("--method span attacks a captured message: give --wire CAPTURE")
    if not args.out:  # a default of its own for each kind of run, checked as a given --out is
        from pathlib import Path

        from ..io import check_writable, safe_filename

        node = f"_node{args.node}" if args.node is not None else ""
        run_name = safe_filename(Path(args.wire).resolve().parent.name) if args.wire else ""
        args.out = f"runs/attacks/wire_{run_name}_round{args.round}{node}.json" \
            if args.wire else SWEEP_OUT
        check_writable(args.out, "file", f"--out (default {args.out})", replace=args.force or args.resume)
    if args.wire:
        rec = attack_wire(args.wire, round=args.round, node=args.node, masked=not args.no_mask, truth=args.truth,
                          span=args.span_test, model=args.model, method=args.method,
                          config=GradientMatchingConfig(iterations=args.iterations, seed=args.seed), log=say)
        write_json_atomic(args.out, rec)
    else:
        rec = run_sweep(args.out, task=args.task, data_dir=args.data_dir, cache_dir=args.cache_dir, dims=args.dims,
                        ks=args.ks, trials=args.trials, iterations=args.iterations, seed=args.seed,
                        victim=args.victim, train_limit=args.train_limit, max_minutes=args.max_minutes,
                        resume=args.resume, log=say)
        say(f"success rates {rec['summary']}")
    say(f"results in {args.out}")
    return 0
