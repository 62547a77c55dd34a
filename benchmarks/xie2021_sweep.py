"""Issue 11 sweeps of the Xie & Hong 2021 reconstruction attack: one results JSON per (task, condition, seed).

    PYTHONPATH=src python benchmarks/xie2021_sweep.py --task cola --conditions 1:4,1:6 --seeds 0,1,2 \
        [--methods paper-greedy,threshold,clique,nmf] [--queries 100] [--graph 0] [--train-limit N] --out-dir runs/i11

Resumable: a (task, condition, seed) whose JSON exists is skipped. ``--train-limit`` uses the first N training
examples (the private, auxiliary, distractor and candidate sets are then drawn from them; stated in the JSON).
The defender's secrets come from ``SecretGenerator(seed)`` (experiments only); the attacker's seed is the same.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True)
    ap.add_argument("--conditions", default="1:4")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--methods", default="paper-greedy,threshold,clique,nmf")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--graph", type=int, default=0)
    ap.add_argument("--nmf-iters", type=int, default=150)
    ap.add_argument("--train-limit", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from privnlu.attacks.audit import parse_condition
    from privnlu.attacks.reconstruction import ReconstructionConfig
    from privnlu.training.engine import RunSpec, prepare
    from privnlu.attacks.reconstruction_sweep import AUX_SIZE, reconstruction_record, reconstruction_sweep
    from privnlu.io import write_json_atomic

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    prep = prepare(RunSpec(task=args.task, train_limit=args.train_limit), progress=False)
    methods = tuple(m for m in args.methods.split(",") if m)
    for seed in (int(s) for s in args.seeds.split(",")):
        for text in args.conditions.split(","):
            cond = parse_condition(text)
            path = out_dir / f"rec_{args.task}_n{args.queries}_{cond.name}_s{seed}{'_g' + str(args.graph) if args.graph else ''}.json"
            if path.exists():
                continue
            t0 = time.time()
            c0 = time.process_time()
            cfg = ReconstructionConfig(seed=seed, graph=args.graph, nmf_iters=args.nmf_iters)
            res = reconstruction_sweep(prep, (cond,), queries=args.queries, epochs=args.epochs, aux_size=AUX_SIZE,
                                       methods=methods, config=cfg, seed=seed, log=print)
            rec = reconstruction_record(prep, res, queries=args.queries, epochs=args.epochs, aux_size=AUX_SIZE, config=cfg,
                                        seed=seed, t0=t0)
            rec["train_limit"] = args.train_limit
            rec["cpu_seconds"] = round(time.process_time() - c0, 1)  # user + system of this process
            rec["config"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in rec["config"].items()}
            write_json_atomic(path, rec)
            print(f"wrote {path} ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
