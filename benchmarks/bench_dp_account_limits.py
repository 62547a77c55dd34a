"""How long `privnlu dp account` takes at extreme settings (issue 14): calibration + accounting, in-process.

Usage: PYTHONPATH=src python benchmarks/bench_dp_account_limits.py
Prints one line per setting: mechanism, epsilon, compositions n = k x epochs, seconds, accounted epsilon, peak RSS.
The first call is made once beforehand so that library import time is not counted.
"""

from __future__ import annotations

import resource
import time

from privnlu.mechanisms.dp import MAX_PARTICIPATIONS, calibrate

CASES = [("gaussian", 1.0, n) for n in (4, 10 ** 5, 10 ** 7, MAX_PARTICIPATIONS)] + \
        [("laplace", 1.0, n) for n in (4, 10 ** 4, 10 ** 5, 10 ** 5 + 1, 10 ** 7, MAX_PARTICIPATIONS)] + \
        [("laplace", eps, 4) for eps in (0.001, 100.0, 1000.0)] + [("gaussian", eps, 4) for eps in (0.001, 1000.0)] + \
        [("laplace", 1.0, 4 * 100)]


def main() -> None:
    calibrate("laplace", epsilon=1.0, delta=1e-5, clip=1.0, dim=384, k=4, epochs=1)  # warm-up (imports)
    print(f"{'mechanism':9s} {'epsilon':>8s} {'n':>11s} {'seconds':>8s} {'accounted':>10s} {'maxrss MB':>9s}")
    for kind, eps, n in CASES:
        t = time.perf_counter()
        cal = calibrate(kind, epsilon=eps, delta=1e-5, clip=1.0, dim=384, k=1, epochs=n)
        dt = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"{kind:9s} {eps:8g} {n:11d} {dt:8.2f} {cal.epsilon:10.6g} {rss:9d}", flush=True)


if __name__ == "__main__":
    main()
