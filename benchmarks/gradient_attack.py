"""Benchmark: wall time of one gradient-matching attack (Algorithm 3) per d, on one CPU thread.

Reports seconds per attack for the no-TextHide baseline and for TextHide (k = 1, 2, 4),
the ratio of each to the baseline at the same d (the reference run, same process), and the
estimated wall time of the full Table 2 sweep (50 attacks per cell, k in {0, 1, 2, 4}).

    PYTHONPATH=src python benchmarks/gradient_attack.py [--reps 3] [--dims 4,16,64,256,1024] [--victim hidden|input]
    PYTHONPATH=src python benchmarks/gradient_attack.py --compare-early-stop [--reps 2] [--victim hidden|input]

``--compare-early-stop`` runs every trial twice, with and without the L-BFGS fixed-point stop,
and reports whether the results are identical (MSE, success, encoding MSE, gradient distance;
NaN == NaN) and the time ratio (the reference is the full 1,200-iteration run, same process).

Uses the cached SST-2 MiniLM features when present, else random features of the same width.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from privnlu.attacks.gradient_matching import GradientMatchingConfig, Trial, run_trial


def load_features() -> tuple[torch.Tensor, torch.Tensor, str]:
    try:
        from privnlu.data import get_task
        from privnlu.models import FeatureCache, load_encoder

        f = FeatureCache().get(load_encoder(), get_task("sst2").load("train"), progress=False)
        return f.features, f.labels, "SST-2 MiniLM features"
    except Exception:  # noqa: BLE001 - benchmark fallback
        g = torch.Generator().manual_seed(0)
        return 0.37 * torch.randn(2000, 384, generator=g), torch.randint(0, 2, (2000,), generator=g), "random features"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dims", default="4,16,64,256,1024")
    ap.add_argument("--compare-early-stop", action="store_true")
    ap.add_argument("--victim", default="hidden", help="hidden (the paper's: mask at a hidden layer) or input")
    args = ap.parse_args()
    torch.set_num_threads(1)
    x, y, source = load_features()
    if args.compare_early_stop:
        compare_early_stop(x, y, [int(v) for v in args.dims.split(",")], args.reps, source, args.victim)
        return
    print(f"# one attack (1,200 L-BFGS iterations at most), 1 thread, {source}, {args.victim} victim")
    print(f"{'d':>6} {'k':>3} {'median s':>9} {'max s':>7} {'x baseline':>10}")
    total = 0.0
    for d in [int(v) for v in args.dims.split(",")]:
        ref = None
        for k in (0, 1, 2, 4):
            times = []
            for r in range(args.reps):
                t0 = time.perf_counter()
                run_trial(x, y, Trial(d, k, 17 + r, 1000 + r, args.victim))
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            ref = med if k == 0 else ref
            total += 50 * statistics.mean(times)
            print(f"{d:>6} {k:>3} {med:>9.2f} {max(times):>7.2f} {med / ref:>10.2f}", flush=True)
    print(f"# estimated full sweep (50 attacks x {len(args.dims.split(','))} d x 4 k): {total / 60:.0f} min on one thread")


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def compare_early_stop(x, y, dims, reps, source, victim) -> None:
    print(f"# early stop at the L-BFGS fixed point vs 1,200 iterations, 1 thread, {source}, {victim} victim")
    print(f"{'d':>6} {'k':>3} {'identical':>9} {'full s':>7} {'early s':>8} {'ratio':>6}")
    n = ok = 0
    tf = te = 0.0
    for d in dims:
        for k in (0, 1, 2, 4):
            good, sf, se = 0, 0.0, 0.0
            for r in range(reps):
                tr = Trial(d, k, 53 * r + 11, 900 + r, victim)
                a = run_trial(x, y, tr, config=GradientMatchingConfig(stop_at_fixed_point=False))
                b = run_trial(x, y, tr, config=GradientMatchingConfig())
                good += all(same(a[f], b[f]) for f in ("mse", "grad_distance", "encoding_mse", "mask_mse", "analytic_mse")
                            if f in a) and a["success"] == b["success"]
                sf, se = sf + a["seconds"], se + b["seconds"]
            n, ok, tf, te = n + reps, ok + good, tf + sf, te + se
            print(f"{d:>6} {k:>3} {good:>5}/{reps:<3} {sf:>7.1f} {se:>8.1f} {se / sf:>6.2f}", flush=True)
    print(f"# identical in {ok} of {n} attacks; {tf:.1f} s -> {te:.1f} s ({tf / te:.2f}x faster)")


if __name__ == "__main__":
    main()
