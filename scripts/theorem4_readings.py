"""Noise and accounted epsilon of the two readings of Xie & Hong 2022, Theorem 4 (docs/dp_encoding.md).

Usage: python scripts/theorem4_readings.py   (prints a Markdown table; delta = 1e-5, C = 1, d = 384, k = 4)
"""

from __future__ import annotations

import math

from privnlu.mechanisms.dp import GaussianEncoding, account, participations, theorem4_sigma

DELTA, C, DIM, K = 1e-5, 1.0, 384, 4
print("| epsilon | sigma, 'std' reading (used) | sigma, literal 'variance' reading | sigma, textbook 2C | "
      "accounted eps, 'std', 1 epoch | 'std', 10 epochs | 'variance', 10 epochs |")
print("|---|---|---|---|---|---|---|")
for eps in (0.1, 1, 4, 8, 20):
    s_std, s_var = theorem4_sigma(eps, DELTA, C, "std"), theorem4_sigma(eps, DELTA, C, "variance")
    textbook = 2 * C * math.sqrt(2 * math.log(1.25 / DELTA)) / eps
    acc = [account(GaussianEncoding(clip=C, noise=s, dim=DIM), participations(K, ep), DELTA)
           for s, ep in ((s_std, 1), (s_std, 10), (s_var, 10))]
    print(f"| {eps:g} | {s_std:.3g} | {s_var:.3g} | {textbook:.3g} | " + " | ".join(f"{a:.3g}" for a in acc) + " |")
