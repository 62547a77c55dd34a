"""``privnlu attack search|invert|reconstruct``: an attack on instance encodings, on a task or on a shared file
(kind "attack"). ``privnlu attack gradient`` is :mod:`.gradient_attack`."""

from __future__ import annotations

import argparse

from ..params import POS_INT, Option, Range
from .common import say, warn_seed
from .options import add

I = int
COMMON = ("task", "data_dir", "train_file", "dev_file", "text_col", "text_pair_col", "label_col", "model", "pooling",
          "cache_dir")
COMMON_HELP = dict(task={"help": "a classification task, e.g. cola, sst2, tweets (with --payload: default the file's "
                                 "task)"},
                   train_file={"help": "your own train file (.csv, .tsv or .jsonl): the attacked examples and candidates "
                                       "(named by --task, default: the --payload file's task or the file's stem)"},
                   dev_file={"help": "your own dev file, same columns as --train-file (invert attacks its examples)"},
                   pooling={"help": "sentence representation: auto (the model's own; with --payload: the file's, as are its "
                                    "encoder and max length; a conflicting value is refused), cls, pooler or mean"},
                   out={"help": "results JSON", "required": True},
                   batch_size={"help": "defender's TextHide batch size", "group": ""})
SBERT = (Option("sbert_model", "--sbert-model", "model for the SBERT metric (default: packaged all-MiniLM-L6-v2, mean "
                "pooling)"), Option("no_sbert", "--no-sbert", "skip the SBERT cosine metric", kind="flag"))
RECONSTRUCT = (
    Option("aux_size", "--aux-size", "attacker's same-distribution examples, disjoint from the private ones", I,
           default=2000, range=POS_INT),
    Option("methods", "--methods", "clustering methods: paper-greedy (the paper's rule, on its vanilla MLP), and "
           "privnlu's threshold, clique, nmf (with --graph: paper-greedy,clique,nmf)",
           default="paper-greedy,threshold,clique,nmf"),
    Option("graph", "--graph", "score only a k-NN graph with this many neighbours per encoding (large releases; "
           "default: all pairs)", I, range=POS_INT),
    Option("nmf_repair_rounds", "--nmf-repair-rounds", "nmf passes that re-seed duplicate groups, each on the previous "
           "pass's groups", I, default=1, range=POS_INT),
    Option("nmf_repair_iters", "--nmf-repair-iters", "nmf iterations per repair pass", I, default=50,
           range=Range(lo=0, integer=True, note="0 = no repair")),
    Option("distractors", "--distractors", "same-split distractors for the strict success metric", I, default=5000,
           range=Range(lo=0, integer=True)),
    Option("solver", "--solver", "least squares under abs: alternating projections or Adam on X and the coefficients",
           default="alternating", choices=("alternating", "adam")),
    Option("sim_releases", "--sim-releases", "simulated releases for the pair network", I, default=3, range=POS_INT),
    Option("pairs", "--pairs", "training pairs per simulated release", I, default=40000, range=POS_INT),
)


def _conditions(default: str) -> Option:
    return Option("conditions", "--conditions", "comma-separated: baseline, mix-only, texthide, random or M:K",
                  default=default)


def _queries(default: int) -> Option:
    return Option("queries", "--queries", "number of attacked examples", I, default=default, range=POS_INT)


def _search(s: argparse.ArgumentParser) -> None:
    add(s, *COMMON, _queries(1000), _conditions("baseline,mix-only,texthide,random"), "batch_size", *SBERT, "seed",
        "out", "payload", "key", Option("corpus_limit", "--corpus-limit", "with --payload: search among the first N training "
                                 "sentences only (default: the whole split)", I, range=POS_INT), **COMMON_HELP)
    s.set_defaults(func=run_search)


def _invert(v: argparse.ArgumentParser) -> None:
    add(v, *COMMON, _queries(500), _conditions("baseline,mix-only,texthide,random"), "batch_size", *SBERT, "seed",
        "out", "train_limit",
        Option("inv_epochs", "--inv-epochs", "MLP training epochs", I, default=20, range=POS_INT), "hidden",
        train_limit={"help": "known pairs: the first N training examples (default: all)", "group": ""},
        hidden={"default": "1024,1024", "help": "MLP hidden sizes", "group": ""}, **COMMON_HELP)
    v.set_defaults(func=run_invert)


def _reconstruct(r: argparse.ArgumentParser) -> None:
    add(r, *COMMON, _queries(100), _conditions("1:1,1:2,1:4,1:6"), "batch_size", *SBERT, "seed", "out",
        "encodings_per_example", *RECONSTRUCT, "mechanism", "epsilon", "delta", "clip", "calibration", "noise",
        Option("noise_free_attacker", "--noise-free-attacker", "train the attacker's pair network on noise-free "
               "simulated releases (default: noise-aware, i.e. with the public mechanism's noise at the same epsilon)",
               kind="flag", group="DP instance encoding"),
        "payload", "key", encodings_per_example={"default": 50, "help": "encodings of each private example in the attacked "
                                                                 "release"},
        mechanism={"help": "attack DP instance encoding instead (Xie & Hong 2022): clip, mix, mask, add calibrated "
                           "noise", "group": "DP instance encoding"}, epsilon={"group": "DP instance encoding"},
        delta={"default": 1e-5, "group": "DP instance encoding"}, clip={"default": 1.0, "group": "DP instance encoding"},
        calibration={"default": "correct", "group": "DP instance encoding"},
        noise={"default": "per-encoding", "group": "DP instance encoding"}, **COMMON_HELP)
    r.set_defaults(func=run_reconstruct)


#: the registry's commands this module builds (``attack gradient`` is :mod:`.gradient_attack`'s)
BUILDERS = {"search": _search, "invert": _invert, "reconstruct": _reconstruct}


def register(asub: argparse._SubParsersAction) -> None:
    """``attack search``, ``attack invert`` and ``attack reconstruct`` (``asub``: the ``attack`` group's subcommands),
    named and described by the attack registry (:mod:`privnlu.attacks.registry`)."""
    from ..attacks.registry import commands

    for command, entry in commands().items():
        if command in BUILDERS:
            BUILDERS[command](asub.add_parser(command, help=entry.summary))


def _target(args: argparse.Namespace):
    from pathlib import Path

    from ..attacks.runs import Target
    from ..errors import require
    from .common import register_user_files

    if args.train_file:  # the user's own files, as a classification task named --task, the payload's, or the stem
        if args.task is None and getattr(args, "payload", None):
            from ..attacks.runs import load_shared

            args.task = load_shared(args.payload).meta.get("task")
        args.task = args.task or Path(args.train_file).stem
        args.regression = False
        register_user_files(args)
    require(args.task is not None or getattr(args, "payload", None) is not None,
            "--task is required (or --train-file/--dev-file with your own data, or attack a file with --payload)")
    warn_seed(args)
    return Target(task=args.task, model=args.model, pooling=args.pooling, data_dir=args.data_dir,
                  cache_dir=args.cache_dir, queries=args.queries, seed=args.seed, progress=not args.quiet)


def _embed(args: argparse.Namespace):
    if args.no_sbert:
        return None
    from ..attacks.representation.leakage import sbert_embedder

    return sbert_embedder(args.sbert_model)


def _owner_key(args: argparse.Namespace) -> dict:
    """``--key`` checked before any work (its contents are read only after the attack has answered), and the
    audit's scale for the score."""
    from ..errors import require

    if args.key is None:
        return {}
    from ..attacks.owner_score import check_key_path
    from ..audit.leakage import on_scale

    require(args.payload is not None, "--key scores an attack on a release: give that release as --payload")
    check_key_path(args.key, args.payload, args.out)
    return {"key": args.key, "scale": on_scale}


def _write(args: argparse.Namespace, rec: dict) -> int:
    from ..io import write_json_atomic

    write_json_atomic(args.out, rec)
    for name, r in (rec.get("conditions") or {}).items():
        if "metrics" in r:
            say(f"  {name:>10}: " + ", ".join(f"{k} {v:.1f}" for k, v in r["metrics"].items()))
    say(f"wrote {args.out}")
    return 0


def run_search(args: argparse.Namespace) -> int:
    from ..attacks import runs

    keyed = _owner_key(args)
    t = _target(args)
    if args.payload:
        return _write(args, runs.search_payload(t, args.payload, own_files=bool(args.train_file),
                                                corpus_limit=args.corpus_limit, log=say, **keyed))
    return _write(args, runs.search(t, runs.conditions(args.conditions), embed=_embed(args),
                                    batch_size=args.batch_size))


def run_invert(args: argparse.Namespace) -> int:
    from ..attacks import runs
    from ..attacks.representation.inversion import InversionConfig

    t = _target(args)
    config = InversionConfig(hidden=tuple(args.hidden), epochs=args.inv_epochs, seed=args.seed or 0)
    return _write(args, runs.invert(t, runs.conditions(args.conditions), config, train_limit=args.train_limit,
                                    embed=_embed(args), batch_size=args.batch_size))


def run_reconstruct(args: argparse.Namespace) -> int:
    from ..attacks import runs
    from ..errors import require

    require(not args.noise_free_attacker or (args.mechanism is not None and not args.payload),
            "--noise-free-attacker applies to a DP release made here (--dp-mechanism, no --payload)")
    require(args.noise == "per-encoding" or (args.mechanism is not None and not args.payload),
            "--dp-noise applies to a DP release made here (--dp-mechanism, no --payload)")
    keyed = _owner_key(args)
    t = _target(args)
    knobs = dict(graph=args.graph or 0, sim_releases=args.sim_releases, pairs=args.pairs, solver=args.solver,
                 nmf_repair_rounds=args.nmf_repair_rounds, nmf_repair_iters=args.nmf_repair_iters)
    if args.payload:
        return _write(args, runs.reconstruct_payload(t, args.payload, args.methods, aux_size=args.aux_size,
                                                     own_files=bool(args.train_file), log=say, **keyed, **knobs))
    methods, config = runs.reconstruction_config(args.methods, epochs=args.encodings_per_example, seed=args.seed,
                                                 **knobs)
    dp = None
    if args.mechanism is not None:
        from ..errors import require
        from ..mechanisms.dp import DPSettings

        require(args.epsilon is not None, "--dp-mechanism needs --dp-epsilon")
        dp = DPSettings(mechanism=args.mechanism, epsilon=args.epsilon, delta=args.delta, clip=args.clip,
                        calibration=args.calibration)
        if args.noise_free_attacker:
            from dataclasses import replace

            config = replace(config, noise_aware=False)
    return _write(args, runs.reconstruct(t, runs.conditions(args.conditions), methods, config,
                                         epochs=args.encodings_per_example, aux_size=args.aux_size,
                                         distractors=args.distractors, dp=dp, noise=args.noise, log=say))
