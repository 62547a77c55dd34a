"""Benchmark: wall time of one gradient-matching attack (Algorithm 3) per d, on one CPU thread.

Reports seconds per attack for the no-TextHide baseline and for TextHide (k = 1, 2, 4),
the ratio of each to the baseline at the same d (the reference run, same process), and the
estimated wall time of the full Table 2 sweep (50 attacks per cell, k in {0, 1, 2, 4}).

    PYTHONPATH=src python benchmarks/gradient_attack.py [--reps 3] [--dims 4,16,64,256,1024]

Uses the cached SST-2 MiniLM features when present, else random features of the same width.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from privnlu.attacks.gradient_matching import Trial, run_trial


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
    args = ap.parse_args()
    torch.set_num_threads(1)
    x, y, source = load_features()
    print(f"# one attack (1,200 L-BFGS iterations at most), 1 thread, {source}")
    print(f"{'d':>6} {'k':>3} {'median s':>9} {'max s':>7} {'x baseline':>10}")
    total = 0.0
    for d in [int(v) for v in args.dims.split(",")]:
        ref = None
        for k in (0, 1, 2, 4):
            times = []
            for r in range(args.reps):
                t0 = time.perf_counter()
                run_trial(x, y, Trial(d, k, 17 + r, 1000 + r))
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            ref = med if k == 0 else ref
            total += 50 * statistics.mean(times)
            print(f"{d:>6} {k:>3} {med:>9.2f} {max(times):>7.2f} {med / ref:>10.2f}", flush=True)
    print(f"# estimated full sweep (50 attacks x {len(args.dims.split(','))} d x 4 k): {total / 60:.0f} min on one thread")


if __name__ == "__main__":
    main()
