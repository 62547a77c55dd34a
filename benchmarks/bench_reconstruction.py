"""Benchmark: the Xie & Hong 2021 reconstruction attack on 5,000 encodings (100 examples x 50 epochs).

Times each stage of the attack (all three clusterings: greedy, clique growth, nmf; alternating-projection
least squares) and compares the factorised pair scoring with a reference that
materialises concatenated pair inputs ``[a; b]`` (the same network, first layer applied to the
concatenation), measured in the same process on a slice of rows and extrapolated to all pairs.

    PYTHONPATH=src python benchmarks/bench_reconstruction.py [--task cola] [--k 4] [--m 1] [--threads 2]

Uses the cached MiniLM features of the task when available (else random 384-d vectors).
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def load_x(task: str, n_needed: int) -> tuple[torch.Tensor, torch.Tensor, str]:
    try:
        from privnlu.data import get_task
        from privnlu.models import FeatureCache, load_encoder

        ds = get_task(task).load("train")
        x = FeatureCache().get(load_encoder(), ds, progress=False).features
        return x, torch.tensor(ds.labels), f"{task} MiniLM features"
    except Exception as exc:  # no GLUE data / cache here: fall back to random vectors
        g = torch.Generator().manual_seed(0)
        return torch.randn(n_needed, 384, generator=g), torch.randint(0, 2, (n_needed,), generator=g), f"random ({exc})"


def naive_scores(net, feats: torch.Tensor, rows: int) -> float:
    """Seconds to score ``rows`` x N pairs by building each concatenated pair input explicitly."""
    lin = torch.nn.Linear(2 * feats.shape[1], net.u.out_features)
    with torch.no_grad():
        lin.weight.copy_(torch.cat([net.u.weight, net.v.weight], 1))
        lin.bias.copy_(net.u.bias)
        t0 = time.perf_counter()
        for i in range(rows):
            pair = torch.cat([feats[i].expand(len(feats), -1), feats], 1)  # (N, 2d) concatenated inputs
            h = torch.relu(lin(pair))
            _ = net.w(h).squeeze(-1) + (net.p(feats[i : i + 1]) * net.q(feats)).sum(-1)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="cola")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--m", default="1")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--naive-rows", type=int, default=100)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from privnlu.attacks.audit import Condition, reconstruction_audit
    from privnlu.attacks.reconstruction import PairScorer, features
    from privnlu.attacks.threat import Corpus
    from privnlu.mechanisms.texthide import parse_m
    from privnlu.rng import SecretGenerator

    x, labels, source = load_x(args.task, args.n + 2000)
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(len(x), generator=g)
    priv, aux = order[: args.n], order[args.n : args.n + 2000]
    t0 = time.perf_counter()
    rec = reconstruction_audit(x[priv], labels[priv], Condition("bench", parse_m(args.m), args.k), SecretGenerator(1, warn=False),
                               epochs=args.epochs, auxiliary=Corpus([""] * len(aux), x[aux]))
    total = time.perf_counter() - t0

    # factorised vs materialised pair scoring, same process, same network shape
    N = args.n * args.epochs
    torch.manual_seed(0)
    net = PairScorer(x.shape[1], 128, 32)
    feats = features(torch.randn(N, x.shape[1]))
    t1 = time.perf_counter()
    net.score_all(feats, 128)
    fact = time.perf_counter() - t1
    naive = naive_scores(net, feats, args.naive_rows) * N / args.naive_rows
    out = {"source": source, "threads": args.threads, "n_encodings": N, "m": args.m, "k": args.k,
           "attack_total_seconds": round(total, 1), "stages": {m: v["seconds"] for m, v in rec["methods"].items()},
           "success": {m: v["success"] for m, v in rec["methods"].items()},
           "pair_scoring_factorised_seconds": round(fact, 2),
           "pair_scoring_materialised_seconds_extrapolated": round(naive, 2),
           "speedup": round(naive / fact, 1)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
