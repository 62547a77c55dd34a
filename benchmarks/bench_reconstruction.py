"""Benchmark: the Xie & Hong 2021 reconstruction attack, all pairs or on a k-NN graph, with time and memory.

    PYTHONPATH=src python benchmarks/bench_reconstruction.py [--task cola] [--train-limit N] [--n 100] [--epochs 50]
        [--k 4] [--m 1] [--graph 0] [--methods ...] [--nmf-seeds clique] [--threads 1] [--out FILE]

``--graph 0`` scores all ``N^2`` pairs (the paper's "all pairs of the encoded data"); ``--graph K`` only the
pairs of a K-nearest-neighbour graph of the ``|e|`` features (:mod:`privnlu.attacks.reconstruction.sparse`).
Reference in the same process: scoring all pairs with the same factorised network, timed on a slice of rows
and extrapolated to ``N^2`` (dense) — the ratio is the speed-up of the graph (or, with ``--graph 0``, of the
factorised first layer over materialised ``[a; b]`` inputs). Peak memory is the process's maximum resident set
(``ru_maxrss``); ``attack_cpu_seconds`` (user + system) is the time on a dedicated core for a one-thread run
(on a shared machine the wall time mostly measures the other processes). Uses the cached MiniLM features of the task (else random 384-d vectors, said in the output).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch

from privnlu.attacks.reconstruction.scale import reference_all_pairs


def load_x(task: str, n_needed: int, train_limit: int | None) -> tuple[torch.Tensor, torch.Tensor, list[str], str]:
    try:
        from privnlu.training.engine import RunSpec, prepare

        prep = prepare(RunSpec(task=task, train_limit=train_limit), progress=False)
        return prep.train_x, torch.tensor(prep.train.labels), prep.train.texts_a, f"{task} train ({len(prep.train)}) MiniLM features"
    except Exception as exc:  # no GLUE data / cache here: fall back to random vectors
        g = torch.Generator().manual_seed(0)
        return (torch.randn(n_needed, 384, generator=g), torch.randint(0, 2, (n_needed,), generator=g), [str(i) for i in range(n_needed)],
                f"random ({exc})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="cola")
    ap.add_argument("--train-limit", type=int)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--m", default="1")
    ap.add_argument("--graph", type=int, default=0)
    ap.add_argument("--nmf-iters", type=int, default=150)
    ap.add_argument("--methods", default="")
    ap.add_argument("--nmf-support", type=int, default=64, help="sparse nmf: groups per encoding")
    ap.add_argument("--nmf-seeds", default="clique", help="the groups nmf starts from: clique or paper-greedy")
    ap.add_argument("--nmf-repair-iters", type=int, default=50, help="nmf iterations after duplicate groups are re-seeded (0: off)")
    ap.add_argument("--nmf-repair-start", choices=("seeds", "warm"), default="seeds",
                    help="the repair restarts every group from its seed, or only the re-seeded ones (warm)")
    ap.add_argument("--nmf-repair-rounds", type=int, default=1, help="repair passes, each on the previous pass's groups")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ref-rows", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1, help="the defender's secrets (experiment only)")
    ap.add_argument("--sample-seed", type=int, default=0, help="which examples are private, distractors, auxiliary")
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from privnlu.attacks.conditions import Condition
    from privnlu.attacks.reconstruction.audit import reconstruction_audit
    from privnlu.attacks.reconstruction.attack import CLUSTERINGS, SPARSE_CLUSTERINGS, ReconstructionConfig, features
    from privnlu.attacks.reconstruction import kernels
    from privnlu.attacks.threat import Corpus
    from privnlu.io import write_json_atomic
    from privnlu.mechanisms.texthide import parse_m
    from privnlu.rng import SecretGenerator

    x, labels, texts, source = load_x(args.task, args.n + 7000, args.train_limit)
    g = torch.Generator().manual_seed(args.sample_seed)
    order = torch.randperm(len(x), generator=g)
    priv, aux, dis = order[: args.n], order[args.n : args.n + 2000], order[args.n + 2000 : args.n + 7000]
    methods = tuple(args.methods.split(",")) if args.methods else (SPARSE_CLUSTERINGS if args.graph else CLUSTERINGS)
    cfg = ReconstructionConfig(seed=0, graph=args.graph, nmf_iters=args.nmf_iters, nmf_seeds=args.nmf_seeds,
                               nmf_support=args.nmf_support, nmf_repair_iters=args.nmf_repair_iters,
                               nmf_repair_start=args.nmf_repair_start, nmf_repair_rounds=args.nmf_repair_rounds)
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    rec = reconstruction_audit(x[priv], labels[priv], Condition("bench", parse_m(args.m), args.k), SecretGenerator(args.seed, warn=False),
                               epochs=args.epochs, auxiliary=Corpus([texts[i] for i in aux.tolist()], x[aux]),
                               candidates=Corpus(texts, x), private_texts=[texts[i] for i in priv.tolist()], config=cfg,
                               methods=methods, distractors_x=x[dis])
    total = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)  # on a shared machine, the fairer clock
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    feats = features(torch.randn(args.n * args.epochs, x.shape[1], generator=g))
    ref = reference_all_pairs(feats, args.ref_rows, materialise=not args.graph)
    scoring = rec["methods"][methods[0]]["seconds"]["score_pairs"]
    out = {"kind": "attack", "attack": "reconstruct-scale", "task": args.task, "train_limit": args.train_limit, "source": source, "threads": args.threads, "sample_seed": args.sample_seed, "defender_seed": args.seed, "n_private": args.n, "n_encodings": args.n * args.epochs, "m": args.m,
           "k": args.k, "graph_neighbours": args.graph or None, "nmf_iters": args.nmf_iters,
           "nmf_seeds": args.nmf_seeds, "nmf_support": args.nmf_support, "nmf_repair_iters": args.nmf_repair_iters,
           "nmf_repair_start": args.nmf_repair_start, "nmf_repair_rounds": args.nmf_repair_rounds,
           "nmf_products": "compiled" if kernels.AVAILABLE else "scipy",
           "repaired_groups": {m: v.get("repaired_groups") for m, v in rec["methods"].items()},
           "attack_total_seconds": round(total, 1), "attack_cpu_seconds": round(cpu, 1), "peak_rss_gib": round(peak_gib, 2),
           "stages": {m: v["seconds"] for m, v in rec["methods"].items()},
           "success": {m: {k: v[k] for k in v if k.startswith("success")} for m, v in rec["methods"].items()},
           "purity": {m: v["purity"] for m, v in rec["methods"].items()},
           "claimed": {m: v.get("claimed") for m, v in rec["methods"].items()},
           "pair_accuracy": rec["pair_accuracy"],
           "pair_scoring_seconds": scoring,
           ("reference_all_pairs_factorised_seconds_extrapolated" if args.graph else
            "reference_materialised_pairs_seconds_extrapolated"): round(ref, 1),
           "speedup_vs_reference": round(ref / max(scoring, 1e-9), 1)}
    print(json.dumps(out, indent=2))
    if args.out:
        write_json_atomic(args.out, out)


if __name__ == "__main__":
    main()
