"""The gradient-matching attack (DLG, TextHide Table 2): stopping L-BFGS at its fixed point against the full run.

``GradientMatchingConfig(stop_at_fixed_point=True)`` (privnlu's default) ends the attacker's L-BFGS once an
iteration no longer moves it, instead of running all 1,200 iterations. Each trial runs both ways in this process,
one thread, over the Table 2 cells (widths ``--dims``, k = 0 (no TextHide), 1, 2, 4). Ratio: ``early_stop_speedup``,
the full runs' total time over the early-stopped runs'. The details count the trials whose results (MSE, success,
encoding MSE, gradient distance) are identical both ways (tests/unit/attacks/test_gradient_matching.py asserts that they are),
and each cell's time. Random features of MiniLM's width (384). Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_gradient_attack.py [--dims 4,16,64,256] [--reps 2]
        [--victim hidden|input]
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from common import save
from privnlu.attacks.gradient.matching import GradientMatchingConfig, Trial, run_trial

KS = (0, 1, 2, 4)
FIELDS = ("mse", "grad_distance", "encoding_mse", "mask_mse", "analytic_mse")


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="4,16,64,256")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--victim", default="hidden", help="hidden (the paper's: mask at a hidden layer) or input")
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x, y = 0.37 * torch.randn(2000, 384, generator=g), torch.randint(0, 2, (2000,), generator=g)
    dims = [int(v) for v in args.dims.split(",")]
    full = early = 0.0
    identical = trials = 0
    per_cell: dict[tuple[int, int], float] = {}
    for d in dims:
        for k in KS:
            cell = 0.0
            for r in range(args.reps):
                tr = Trial(d, k, 53 * r + 11, 900 + r, args.victim)
                t0 = time.perf_counter()
                a = run_trial(x, y, tr, config=GradientMatchingConfig(stop_at_fixed_point=False))
                t1 = time.perf_counter()
                b = run_trial(x, y, tr, config=GradientMatchingConfig())
                t2 = time.perf_counter()
                full, early, cell = full + t1 - t0, early + t2 - t1, cell + t2 - t1
                identical += all(same(a[f], b[f]) for f in FIELDS if f in a) and a["success"] == b["success"]
                trials += 1
            per_cell[d, k] = cell
    save("gradient_attack", reference="the same attacks run for all 1,200 L-BFGS iterations",
         ratios={"early_stop_speedup": full / early},
         dims=dims, reps=args.reps, victim=args.victim, trials=trials, identical_results=identical,
         seconds={"full": full, "early_stop": early, "early_stop_per_cell": {f"d{d}-k{k}": v for (d, k), v in per_cell.items()}})


if __name__ == "__main__":
    main()
