"""``privnlu attack gradient``: DLG against TextHide (Algorithm 3, Table 2), in-process sweep or on a wire capture."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..errors import PrivnluError
from .common import int_list, positive_int, say


def register(sub: argparse._SubParsersAction) -> None:
    """``attack gradient`` (``sub``: the ``attack`` group's subcommands)."""
    p = sub.add_parser(
        "gradient", help="gradient-matching attack (DLG) on shared gradients (TextHide Table 2)",
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
    p.add_argument("--wire", help="attack a capture (<run>/wire.safetensors) instead of sweeping")
    p.add_argument("--round", type=positive_int, default=1, help="with --wire: the round to attack")
    p.add_argument("--node", type=int, help="with --wire: the client node id (default: the first reply)")
    p.add_argument("--no-mask", action="store_true", help="with --wire: the run used no TextHide mask")
    p.add_argument("--truth", metavar="RUN_DIR",
                   help="with --wire: score the recovery against that (seeded, in-process) federated run: the token "
                        "sets against each client's replayed batch, the DLG recovery against the training "
                        "representations of a frozen-mode run (evaluation only: the attacker never reads them)")
    p.add_argument("--span-test", action="store_true",
                   help="with --wire: also run the first-layer span test (DAGER-style; needs no embedding gradient, "
                        "so it applies to the frozen default; about a minute per message on a CPU)")
    p.add_argument("--model", default="", help="with --wire: the encoder folder of the run, whose tokenizer names "
                                               "the recovered token ids (default: the run's, or packaged MiniLM)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted sweep from --out: finished attacks are kept, not re-run")
    p.add_argument("--out", help="results JSON (default: runs/attacks/gradient_matching.json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from ..attacks.gradient_matching import VICTIMS, GradientMatchingConfig, row_key, summarize, sweep
    from ..paper_values.huang2020_gradient import PAPER_TABLE2
    from ..io import write_json_atomic

    if args.victim not in VICTIMS:
        raise PrivnluError(f"--victim must be one of {', '.join(VICTIMS)}, not '{args.victim}'")
    cfg = GradientMatchingConfig(iterations=args.iterations, seed=args.seed)
    out = Path(args.out) if args.out else Path("runs/attacks/gradient_matching.json")
    torch.set_num_threads(1)
    t0 = time.time()
    if args.wire:
        return _attack_wire(args, cfg, out)
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


def _attack_wire(args: argparse.Namespace, cfg, out: Path) -> int:
    """--wire: the embedding-gradient token sets of every captured client message (issue 12), then DLG on the
    head gradient of one message (TextHide Algorithm 3)."""
    from ..attacks.embedding_leak import audit_capture
    from ..attacks.gradient_matching import attack_capture
    from ..federated.wire import load_capture
    from ..io import write_json_atomic
    from ..models import load_encoder

    capture = load_capture(args.wire)
    run_cfg = _run_config(Path(args.truth)) if args.truth else None
    encoder = load_encoder((args.model or (run_cfg.model if run_cfg else "")) or None)
    leak = audit_capture(capture, encoder, truth_cfg=run_cfg if run_cfg is not None and run_cfg.mode == "joint" else None,
                         span=args.span_test)
    for row in leak:
        who = f"sum of {row['participants']} clients" if row["node_id"] == "sum" else f"node {row['node_id']}"
        if "span" in row:
            sp = row["span"]
            score = (f" (precision {sp['precision']:.2f}, recall {sp['recall']:.2f}; precision of the "
                     f"|true| best-ranked {sp['precision_at_true_count']:.2f})" if "precision" in sp else "")
            say(f"round {row['round']} {who}: span test (rank {sp['rank']}) selects {len(sp['token_ids'])} token ids{score}")
        if not row.get("embedding_gradient"):
            if "span" not in row:
                say(f"round {row['round']} {who}: no embedding-table gradient on the wire (tables frozen; the "
                    "first-layer span test, --span-test, may still find the tokens)")
            continue
        words = ", ".join([t for t in row["tokens"] if not t.startswith("[")][:12])
        score = f" (precision {row['precision']:.2f}, recall {row['recall']:.2f})" if "precision" in row else ""
        say(f"round {row['round']} {who}: {len(row['token_ids'])} token ids read off the embedding gradient{score}: "
            f"{words}{' ...' if len(row['tokens']) > 12 else ''}")
    rec: dict = {"kind": "gradient_attack", "source": "wire", "wire": str(args.wire), "token_leak": leak}
    plain = [e for e in capture.received if e["round"] == args.round and "gradients" in e.get("arrays", {})
             and (args.node is None or e["node_id"] == args.node)]
    if plain:
        res, info = attack_capture(capture, round=args.round, node_id=args.node, masked=not args.no_mask, config=cfg)
        rec.update({**info, "masked": not args.no_mask, "recovered": res.recovered.tolist(),
                    "grad_distance": res.grad_distance, "seconds": round(res.seconds, 2)})
        verdict = ""
        if run_cfg is not None and run_cfg.mode == "frozen":
            mse, ok = _score_against_run(Path(args.truth), res.recovered)
            rec.update({"mse": mse, "success": ok})
            verdict = f"; min MSE to a training representation {mse:.3g} (success: {ok})"
        say(f"DLG on round {info['round']} node {info['node_id']}: gradient distance {res.grad_distance:.2e} "
            f"in {res.seconds:.1f}s{verdict}")
    else:
        say(f"no plain client gradient in round {args.round} (secure aggregation, FedAvg or no such node): DLG skipped")
    write_json_atomic(out, rec)
    say(f"results in {out}")
    return 0


def _run_config(run_dir: Path):
    from ..federated.config import FederatedConfig
    from ..io import read_json

    try:
        return FederatedConfig(**read_json(run_dir / "result.json")["config"])
    except (OSError, KeyError, ValueError, TypeError):
        raise PrivnluError(f"--truth {run_dir}: not a finished privnlu federated run folder") from None


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
        raise PrivnluError(f"--resume: {out} is not an `attack gradient` sweep result") from None
    if not same:
        raise PrivnluError(f"--resume: {out} was written with other settings (task, dims, ks, trials, seed, iterations, "
                           "victim, train limit)")
    return rows


def _score_against_run(run_dir: Path, recovered) -> tuple[float, bool]:
    """Min MSE between the recovery and any training representation of the run (the evaluator's ground truth)."""
    from ..attacks.gradient_matching import score
    from ..federated.data import cached_features, load_train
    from ..federated.model import load_config_encoder

    cfg = _run_config(run_dir)
    if cfg.mode != "frozen":
        raise PrivnluError("--truth needs a frozen-mode run (its representations are fixed)")
    x = cached_features(cfg, load_config_encoder(cfg), load_train(cfg))
    return score(recovered, x)
