"""DP calibration and accounting (what ``privnlu dp account`` runs) at extreme settings, against the everyday one.

For each mechanism, the reference is calibrating epsilon = 1 over n = 4 compositions (k = 4, one epoch), timed in
this process; every extreme setting (n up to the most privnlu accounts, epsilon from 0.001 to 1000) is timed once
and divided by its mechanism's reference. Ratios: the slowest setting over the reference, per mechanism, and the
peak resident memory after all settings over the memory after the first (warm-up) call. Every setting's ratio and
accounted epsilon are in the details. Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_dp_account_limits.py
"""

from __future__ import annotations

import resource

from common import save, timed
from privnlu.mechanisms.dp import MAX_PARTICIPATIONS, calibrate

CASES = [("gaussian", 1.0, n) for n in (10 ** 5, 10 ** 7, MAX_PARTICIPATIONS)] + \
        [("laplace", 1.0, n) for n in (10 ** 4, 10 ** 5, 10 ** 5 + 1, 10 ** 7, MAX_PARTICIPATIONS)] + \
        [("laplace", eps, 4) for eps in (0.001, 100.0, 1000.0)] + [("gaussian", eps, 4) for eps in (0.001, 1000.0)] + \
        [("laplace", 1.0, 4 * 100)]


def run(kind: str, eps: float, n: int):
    return timed(lambda: calibrate(kind, epsilon=eps, delta=1e-5, clip=1.0, dim=384, k=1, epochs=n))


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    calibrate("laplace", epsilon=1.0, delta=1e-5, clip=1.0, dim=384, k=4, epochs=1)  # warm-up (imports)
    rss0 = peak_rss()
    ref = {kind: run(kind, 1.0, 4)[0] for kind in ("gaussian", "laplace")}
    cases = {}
    for kind, eps, n in CASES:
        seconds, cal = run(kind, eps, n)
        cases[f"{kind} eps={eps:g} n={n}"] = {"ratio_to_reference": seconds / ref[kind], "accounted_epsilon": cal.epsilon}
    slowest = {kind: max(v["ratio_to_reference"] for c, v in cases.items() if c.startswith(kind)) for kind in ref}
    save("dp_account_limits", reference="calibrating epsilon = 1 over n = 4 compositions, same mechanism",
         ratios={**{f"{kind}_slowest_over_reference": v for kind, v in slowest.items()},
                 "peak_memory_over_warm_up": peak_rss() / rss0},
         reference_seconds=ref, settings=cases)


if __name__ == "__main__":
    main()
