"""``privnlu gradient-attack``: DLG against TextHide (Algorithm 3, Table 2), in-process sweep or on a wire capture."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..errors import PrivnluError
from .common import int_list, positive_int, say


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gradient-attack", help="gradient-matching attack (DLG) on shared gradients (TextHide Table 2)",
        description="Sweep: attack batch-size-1 gradients, d x k, with m = 1 (k = 0 is the no-TextHide baseline). "
                    "--victim hidden (default, the paper's): MiniLM representation -> non-linear layer -> hidden "
                    "layer of width d, masked -> head; --victim input: the representation projected to d and "
                    "masked directly. --wire: attack one client gradient "
                    "from a capture written by `privnlu federated --record-wire`.")
    p.add_argument("--task", default="sst2", help="task whose cached train representations are attacked (default: sst2)")
    p.add_argument("--data-dir", help="GLUE data folder")
    p.add_argument("--cache-dir", help="feature cache folder")
    p.add_argument("--dims", type=int_list, default=[4, 16, 64, 256, 1024], help="projected dimensions d")
    p.add_argument("--ks", type=int_list, default=[0, 1, 2, 4], help="k values; 0 = no TextHide (default: 0,1,2,4)")
    p.add_argument("--trials", type=positive_int, default=50, help="independent attacks per (d, k) (default: 50)")
    p.add_argument("--iterations", type=positive_int, default=1200, help="L-BFGS iterations in all (default: 1200)")
    p.add_argument("--seed", type=int, default=0, help="experiment seed (trial choice, attacker init, victim keys)")
    p.add_argument("--victim", default="hidden", help="sweep: hidden (the paper's, mask at a hidden layer of width d) "
                   "or input (mask on the projected input) (default: hidden)")
    p.add_argument("--train-limit", type=positive_int,
                   help="sweep: attack examples among the first N training sentences only (default: all)")
    p.add_argument("--max-minutes", type=float, help="sweep: start no new attack after this many minutes "
                   "(the rounds are paired across cells, so a cut-short sweep stays balanced; --resume continues)")
    p.add_argument("--wire", help="attack a capture (<run>/wire.pt) instead of sweeping")
    p.add_argument("--round", type=positive_int, default=1, help="with --wire: the round to attack")
    p.add_argument("--node", type=int, help="with --wire: the client node id (default: the first reply)")
    p.add_argument("--no-mask", action="store_true", help="with --wire: the run used no TextHide mask")
    p.add_argument("--truth", metavar="RUN_DIR",
                   help="with --wire: score the recovery against the training representations of that federated run "
                        "(evaluation only: the attacker never reads them)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted sweep from --out: finished attacks are kept, not re-run")
    p.add_argument("--out", help="results JSON (default: runs/attacks/gradient_matching.json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from ..attacks.gradient_matching import (
        PAPER_TABLE2, VICTIMS, GradientMatchingConfig, attack_capture, row_key, summarize, sweep,
    )
    from ..io import write_json_atomic

    if any(d < 1 for d in args.dims) or any(k < 0 for k in args.ks):
        raise PrivnluError("--dims must be >= 1 and --ks >= 0")
    if args.victim not in VICTIMS:
        raise PrivnluError(f"--victim must be one of {', '.join(VICTIMS)}, not '{args.victim}'")
    if args.max_minutes is not None and not args.max_minutes > 0:
        raise PrivnluError("--max-minutes must be positive")
    cfg = GradientMatchingConfig(iterations=args.iterations, seed=args.seed)
    out = Path(args.out) if args.out else Path("runs/attacks/gradient_matching.json")
    torch.set_num_threads(1)
    t0 = time.time()
    if args.wire:
        from ..federated.wire import load_capture

        res, info = attack_capture(load_capture(args.wire), round=args.round, node_id=args.node, masked=not args.no_mask,
                                   config=cfg)
        rec = {"kind": "gradient_attack", "source": "wire", "wire": str(args.wire), **info,
               "masked": not args.no_mask, "recovered": res.recovered.tolist(),
               "grad_distance": res.grad_distance, "seconds": round(res.seconds, 2)}
        verdict = ""
        if args.truth:
            mse, ok = _score_against_run(Path(args.truth), res.recovered)
            rec.update({"mse": mse, "success": ok})
            verdict = f"; min MSE to a training representation {mse:.3g} (success: {ok})"
        write_json_atomic(out, rec)
        say(f"attacked round {info['round']} node {info['node_id']}: gradient distance {res.grad_distance:.2e} "
            f"in {res.seconds:.1f}s{verdict}; recovered input in {out}")
        return 0
    from ..data import get_task
    from ..models import FeatureCache, load_encoder

    task = get_task(args.task)
    train = task.load("train", args.data_dir).head(args.train_limit)
    feats = FeatureCache(args.cache_dir).get(load_encoder(), train, progress=False)

    done: list[dict] = _finished_cells(out, args, cfg, task.name) if args.resume else []
    skip = {row_key(r) for r in done}
    if skip:
        say(f"resuming {out}: {len(skip)} finished attacks kept")

    def record(rows: list[dict], complete: bool) -> dict:
        return {"kind": "gradient_attack", "source": "sweep", "complete": complete, "task": task.name, "train_limit": args.train_limit,
                "encoder": "packaged MiniLM (cls)", "victim": args.victim, "batch_size": 1, "m": 1, "trials": args.trials, "dims": args.dims,
                "ks": args.ks, "config": cfg.__dict__, "summary": summarize(rows), "paper": PAPER_TABLE2, "rows": rows,
                "seconds": round(time.time() - t0, 1)}

    def progress(row):
        done.append(row)
        say(f"d={row['d']:5d} k={row['k']} mse={row['mse']:.2e} success={row['success']} ({row['seconds']:.1f}s)")
        if len(done) % max(1, len(args.dims) * len(args.ks)) == 0:  # a finished round: keep partial results
            write_json_atomic(out, record(done, complete=False))

    deadline = t0 + 60 * args.max_minutes if args.max_minutes else None
    sweep(feats.features, feats.labels, dims=args.dims, ks=args.ks, trials=args.trials, seed=args.seed,
          config=cfg, progress=progress, skip=skip, victim=args.victim, deadline=deadline)
    rec = record(done, complete=len(done) == args.trials * len(args.dims) * len(args.ks))
    write_json_atomic(out, rec)
    say(f"success rates {rec['summary']}; results in {out}")
    return 0


def _finished_cells(out: Path, args: argparse.Namespace, cfg, task_name: str) -> list[dict]:
    """Rows of the (d, k) cells an earlier run of the same sweep finished (all ``--trials`` attacks)."""
    from ..io import read_json

    if not out.exists():
        return []
    try:
        old = read_json(out)
        same = (old["kind"], old["source"], old["task"], old["dims"], old["ks"], old["trials"], old["config"]["seed"],
                old["config"]["iterations"], old.get("victim", "input"), old.get("train_limit")) == (
            "gradient_attack", "sweep", task_name, args.dims, args.ks, args.trials, cfg.seed, cfg.iterations, args.victim,
            args.train_limit)
        rows = old["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        raise PrivnluError(f"--resume: {out} is not a gradient-attack sweep result") from None
    if not same:
        raise PrivnluError(f"--resume: {out} was written with other settings (task, dims, ks, trials, seed, iterations, "
                           "victim, train limit)")
    return rows


def _score_against_run(run_dir: Path, recovered) -> tuple[float, bool]:
    """Min MSE between the recovery and any training representation of the run (the evaluator's ground truth)."""
    from ..attacks.gradient_matching import score
    from ..federated.config import FederatedConfig
    from ..federated.data import cached_features, load_train
    from ..federated.model import load_config_encoder
    from ..io import read_json

    try:
        cfg = FederatedConfig(**read_json(run_dir / "result.json")["config"])
    except (OSError, KeyError, ValueError, TypeError):
        raise PrivnluError(f"--truth {run_dir}: not a finished privnlu federated run folder") from None
    if cfg.mode != "frozen":
        raise PrivnluError("--truth needs a frozen-mode run (its representations are fixed)")
    x = cached_features(cfg, load_config_encoder(cfg), load_train(cfg))
    return score(recovered, x)
