"""``privnlu attack search|invert|reconstruct``: run an attack on instance encodings and write a results JSON
(kind "attack"). (``privnlu attack gradient`` lives in :mod:`.gradient_attack`.)

Each attack plays the defender (encodes a task's examples under the chosen
conditions), gives the attacker only what its threat model grants, and scores
the attacker's output against the truth.
"""

from __future__ import annotations

import argparse
import time

from ..errors import PrivnluError, require
from .attack_payload import add_user_file_args, register_attack_files
from .common import positive_int, say, warn_seed


def register(asub: argparse._SubParsersAction) -> None:
    """``attack search``, ``attack invert`` and ``attack reconstruct`` (``asub``: the ``attack`` group's subcommands)."""
    s = asub.add_parser("search", help="FAISS similarity search with privatized representations (TextHide section 4.4)")
    _common(s, queries=1000, conditions="baseline,mix-only,texthide,random")
    _payload_arg(s)
    s.add_argument("--corpus-limit", type=positive_int,
                   help="with --payload: search among the first N training sentences only (default: the whole split)")
    s.set_defaults(func=run_search)

    v = asub.add_parser("invert", help="learn encoding -> original with an MLP, then search (TextHide appendix C.3)")
    _common(v, queries=500, conditions="baseline,mix-only,texthide,random")
    v.add_argument("--train-limit", type=positive_int, help="known pairs: the first N training examples (default: all)")
    v.add_argument("--inv-epochs", type=positive_int, default=20, help="MLP training epochs (default: 20)")
    v.add_argument("--hidden", default="1024,1024", help="MLP hidden sizes (default: 1024,1024)")
    v.set_defaults(func=run_invert)

    r = asub.add_parser("reconstruct", help="recover the private representations from a release (Xie & Hong 2021)")
    _common(r, queries=100, conditions="1:1,1:2,1:4,1:6")
    r.add_argument("--encodings-per-example", type=positive_int, default=50,
                   help="encodings of each private example in the attacked release (default: 50)")
    r.add_argument("--aux-size", type=positive_int, default=2000,
                   help="attacker's same-distribution examples, disjoint from the private ones (default: 2000)")
    r.add_argument("--methods", default="paper-greedy,threshold,clique,nmf",
                   help="clustering methods: paper-greedy (the paper's rule, on its vanilla MLP), and privnlu's threshold, "
                        "clique, nmf (default: all four; with --graph: paper-greedy,clique,nmf)")
    r.add_argument("--graph", type=positive_int, help="score only a k-NN graph with this many neighbours per encoding "
                   "(large releases; default: all pairs)")
    r.add_argument("--nmf-repair-rounds", type=positive_int, default=1,
                   help="nmf passes that re-seed duplicate groups, each on the previous pass's groups (default: 1; "
                        "3 with --nmf-repair-iters 40 recovered 1.8-3 points more at 300 and 1,000 examples, session 14)")
    r.add_argument("--nmf-repair-iters", type=int, default=50, help="nmf iterations per repair pass (default: 50)")
    r.add_argument("--distractors", type=int, default=5000,
                   help="same-split distractors for the strict success metric (default: 5000)")
    r.add_argument("--solver", default="alternating", choices=["alternating", "adam"],
                   help="least squares under abs: alternating projections (default) or Adam on X and the coefficients")
    r.add_argument("--sim-releases", type=positive_int, default=3, help="simulated releases for the pair network (default: 3)")
    r.add_argument("--pairs", type=positive_int, default=40000, help="training pairs per simulated release (default: 40000)")
    r.add_argument("--dp-mechanism", choices=["gaussian", "laplace"],
                   help="attack DP instance encoding instead (Xie & Hong 2022): clip, mix, mask, add calibrated noise")
    r.add_argument("--dp-epsilon", type=float, help="target epsilon per example for the whole release (with --dp-mechanism)")
    r.add_argument("--dp-delta", type=float, default=1e-5)
    r.add_argument("--dp-clip", type=float, default=1.0, help="clipping bound C (default: 1)")
    r.add_argument("--dp-calibration", default="correct", choices=["correct", "paper"],
                   help="DP calibration; 'paper' is NOT a valid DP guarantee")
    _payload_arg(r)
    r.set_defaults(func=run_reconstruct)


def _common(p: argparse.ArgumentParser, *, queries: int, conditions: str) -> None:
    p.add_argument("--task", help="a classification task, e.g. cola, sst2, tweets (with --payload: default the file's task)")
    p.add_argument("--data-dir", help="GLUE data folder (default: $PRIVNLU_DATA, else ../shared/data/glue)")
    add_user_file_args(p)
    p.add_argument("--model", help="encoder folder (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--pooling", default="cls", choices=["cls", "pooler", "mean"])
    p.add_argument("--cache-dir", help="feature cache folder (default: ~/.cache/privnlu)")
    p.add_argument("--queries", type=positive_int, default=queries, help=f"number of attacked examples (default: {queries})")
    p.add_argument("--conditions", default=conditions,
                   help=f"comma-separated: baseline, mix-only, texthide, random or M:K (default: {conditions})")
    p.add_argument("--batch-size", type=positive_int, default=64, help="defender's TextHide batch size (default: 64)")
    p.add_argument("--sbert-model", help="model for the SBERT metric (default: packaged all-MiniLM-L6-v2, mean pooling)")
    p.add_argument("--no-sbert", action="store_true", help="skip the SBERT cosine metric")
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    p.add_argument("--out", required=True, help="results JSON")
    p.add_argument("--quiet", action="store_true")


def _payload_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--payload", metavar="FILE",
                   help="attack this shared encoding file (written by 'privnlu encode') instead of encoding a task; "
                        "reads only the shared file, never a key file. There is no ground truth, so the output is the "
                        "attacker's answer (nearest sentences and cosines), not a success rate")


def _conditions(text: str):
    from ..attacks.audit import parse_condition

    conds = tuple(parse_condition(c.strip()) for c in text.split(",") if c.strip())
    require(bool(conds), "--conditions is empty")
    return conds


def _need_task(args: argparse.Namespace) -> None:
    require(args.task is not None or args.train_file is not None,
            "--task is required (or --train-file/--dev-file with your own data, or attack a file with --payload)")


def _prepare(args: argparse.Namespace, *, train_limit: int | None = None):
    from ..training.engine import RunSpec, prepare

    register_attack_files(args)
    spec = RunSpec(task=args.task, model=args.model, pooling=args.pooling, data_dir=args.data_dir, cache_dir=args.cache_dir,
                   train_limit=train_limit)
    prep = prepare(spec, progress=not args.quiet)
    require(not prep.task.is_regression, f"attack audits need a classification task; {prep.task.name} is a regression task")
    return spec, prep


def _embed(args: argparse.Namespace):
    if args.no_sbert:
        return None
    from ..attacks.leakage import sbert_embedder

    return sbert_embedder(args.sbert_model)


def _query_idx(n: int, queries: int, seed: int | None):
    import torch

    require(queries <= n, f"--queries {queries} is more than the {n} examples available")
    g = torch.Generator().manual_seed(seed if seed is not None else 0)  # which examples to audit; not a secret
    return torch.randperm(n, generator=g)[:queries].sort().values


def _record(args, attack: str, threat, prep, results: dict, t0: float, **extra) -> dict:
    from ..version import __version__
    from ..models.encoder import public_model_name

    return {"kind": "attack", "attack": attack, "privnlu": __version__, "task": prep.task.name,
            "threat_model": threat.to_json(), "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling,
            "n_queries": args.queries, "conditions": results, "experiment_seed": args.seed,
            "seconds": round(time.time() - t0, 2), **extra}


def _rng(args):
    from ..rng import SecretGenerator

    return SecretGenerator(args.seed, warn=False)


def run_search(args: argparse.Namespace) -> int:
    import torch

    from ..attacks.audit import search_audit
    from ..io import write_json_atomic
    from ..attacks.threat import SEARCH_THREAT, Corpus

    if args.payload:
        from .attack_payload import search_payload

        return search_payload(args)
    _need_task(args)
    warn_seed(args)
    t0 = time.time()
    conds = _conditions(args.conditions)
    _, prep = _prepare(args)
    assert prep.train_x is not None
    corpus = Corpus(prep.train.texts_a, prep.train_x, torch.tensor(prep.train.labels))
    idx = _query_idx(len(corpus), args.queries, args.seed)
    results = search_audit(corpus, idx, conds, _rng(args), embed=_embed(args), batch_size=args.batch_size,
                           guess_seed=args.seed or 0)
    rec = _record(args, "search", SEARCH_THREAT, prep, results, t0, corpus=f"{prep.task.name}/train", corpus_size=len(corpus))
    write_json_atomic(args.out, rec)
    _summary(results)
    say(f"wrote {args.out}")
    return 0


def run_invert(args: argparse.Namespace) -> int:
    import torch

    from ..attacks.audit import inversion_audit
    from ..attacks.inversion import InversionConfig
    from ..attacks.threat import INVERSION_THREAT, Corpus
    from ..io import write_json_atomic
    from .common import int_list

    _need_task(args)
    warn_seed(args)
    t0 = time.time()
    conds = _conditions(args.conditions)
    try:
        hidden = tuple(int_list(args.hidden))
    except argparse.ArgumentTypeError as exc:
        raise PrivnluError(f"--hidden: {exc}") from None
    config = InversionConfig(hidden=hidden, epochs=args.inv_epochs, seed=args.seed if args.seed is not None else 0)
    _, prep = _prepare(args, train_limit=args.train_limit)
    split = prep.task.eval_splits[0]
    assert prep.train_x is not None
    dev = Corpus(prep.evals[split].texts_a, prep.eval_x[split], torch.tensor(prep.evals[split].labels))
    idx = _query_idx(len(dev), args.queries, args.seed)
    results = inversion_audit(prep.train_x, torch.tensor(prep.train.labels), dev, idx, conds, _rng(args),
                              embed=_embed(args), config=config, batch_size=args.batch_size, guess_seed=args.seed or 0)
    rec = _record(args, "invert", INVERSION_THREAT, prep, results, t0, corpus=f"{prep.task.name}/{split}",
                  corpus_size=len(dev), n_known_pairs=len(prep.train), mlp={"hidden": list(hidden), "epochs": args.inv_epochs})
    write_json_atomic(args.out, rec)
    _summary(results)
    say(f"wrote {args.out}")
    return 0


def run_reconstruct(args: argparse.Namespace) -> int:
    from ..attacks.reconstruction_sweep import reconstruction_record, reconstruction_sweep
    from ..io import write_json_atomic

    methods, config = reconstruction_settings(args, args.encodings_per_example)
    if args.payload:
        from .attack_payload import reconstruct_payload

        return reconstruct_payload(args, methods)
    _need_task(args)
    warn_seed(args)
    t0 = time.time()
    conds = _conditions(args.conditions)
    require(not any(c.random for c in conds), "reconstruct takes M:K conditions (or baseline, mix-only, texthide), not random")
    require(args.encodings_per_example >= 2, "too few encodings to cluster: use --encodings-per-example 2 or more")
    dp = None
    if args.dp_mechanism is not None:
        from ..mechanisms.dp import DPSettings

        require(args.dp_epsilon is not None, "--dp-mechanism needs --dp-epsilon")
        dp = DPSettings(mechanism=args.dp_mechanism, epsilon=args.dp_epsilon, delta=args.dp_delta, clip=args.dp_clip,
                        calibration=args.dp_calibration)
    _, prep = _prepare(args)
    results = reconstruction_sweep(prep, conds, queries=args.queries, epochs=args.encodings_per_example,
                                   aux_size=args.aux_size, methods=methods, config=config, dp=dp, seed=args.seed, distractors=args.distractors, log=say)
    rec = reconstruction_record(prep, results, queries=args.queries, epochs=args.encodings_per_example, aux_size=args.aux_size,
                                config=config, seed=args.seed, t0=t0)
    write_json_atomic(args.out, rec)
    say(f"wrote {args.out}")
    return 0


def reconstruction_settings(args: argparse.Namespace, epochs: int):
    """(clustering methods, the attacker's :class:`ReconstructionConfig`) from the command line."""
    from ..attacks.reconstruction import CLUSTERINGS, SPARSE_CLUSTERINGS, ReconstructionConfig

    graph = getattr(args, "graph", None) or 0
    text = ",".join(SPARSE_CLUSTERINGS) if graph and args.methods == ",".join(CLUSTERINGS) else args.methods
    methods = tuple(m.strip() for m in text.split(",") if m.strip())
    require(bool(methods), "--methods is empty")
    for m in methods:
        require(m in CLUSTERINGS, f"unknown clustering '{m}'; choose from {', '.join(CLUSTERINGS)}")
        require(not graph or m in SPARSE_CLUSTERINGS, f"--graph runs only {', '.join(SPARSE_CLUSTERINGS)}, not '{m}'")
    require(getattr(args, "distractors", 0) >= 0, "--distractors must be >= 0")
    config = ReconstructionConfig(sim_releases=args.sim_releases, sim_epochs=max(2, min(epochs, 20)), pairs_per_release=args.pairs,
                                  solver=args.solver, seed=args.seed if args.seed is not None else 0, graph=graph,
                                  nmf_repair_rounds=args.nmf_repair_rounds, nmf_repair_iters=args.nmf_repair_iters)
    return methods, config


def _summary(results: dict) -> None:
    for name, r in results.items():
        say(f"  {name:>10}: " + ", ".join(f"{k} {v:.1f}" for k, v in r["metrics"].items()))
