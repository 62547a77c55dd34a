"""The numbers of docs/dp_encoding.md, section "Empirical DP audit": the audit's power and a set of audits.

    PYTHONPATH=src OMP_NUM_THREADS=1 python scripts/dp_audit_table.py [--draws 100000] [--out runs/dp_audit/table.json]

Prints markdown tables; every audit uses the real mechanisms (privnlu.attacks.dp_audit) with seed 0 (experiments only).
"""

from __future__ import annotations

import argparse
import json
import time

from privnlu.attacks.dp_audit import audit_dchi, audit_encoding, max_certifiable_epsilon, pick_pairs
from privnlu.io import write_json_atomic
from privnlu.mechanisms.dp import calibrate
from privnlu.rng import SecretGenerator

ENCODING_CASES = [  # (mechanism, calibration, epsilon, d, k, epochs)
    ("gaussian", "correct", 1, 64, 1, 1), ("gaussian", "correct", 8, 64, 1, 1), ("gaussian", "correct", 8, 64, 4, 5),
    ("laplace", "correct", 1, 64, 1, 1), ("laplace", "correct", 8, 64, 1, 1), ("laplace", "correct", 8, 64, 4, 5),
    ("gaussian", "paper", 1, 64, 1, 1), ("gaussian", "paper", 8, 64, 1, 1),
    ("laplace", "paper", 1, 64, 1, 1), ("laplace", "paper", 1, 384, 1, 1), ("laplace", "paper", 8, 384, 1, 1),
    ("laplace", "paper", 8, 64, 4, 5),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=100_000)
    ap.add_argument("--dchi-eta", type=float, default=5.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows: dict = {"power": [], "encoding": [], "dchi": []}
    print("| draws per hypothesis | held out | largest certifiable epsilon (delta = 0) | (delta = 1e-5) |\n|---|---|---|---|")
    for n in (2_000, 20_000, 100_000, 1_000_000, 10_000_000):
        p0, p5 = max_certifiable_epsilon(n // 2), max_certifiable_epsilon(n // 2, 1e-5)
        rows["power"].append({"draws": n, "delta0": p0, "delta1e-5": p5})
        print(f"| {n:,} | {n // 2:,} | {p0:.2f} | {p5:.2f} |")
    print("\n| mechanism | calibration | claimed epsilon | d | k x epochs | accounted epsilon | eps_lb (95 %) | verdict | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, calib, eps, d, k, ep in ENCODING_CASES:
        t = time.time()
        cal = calibrate(kind, epsilon=eps, delta=1e-5, clip=1.0, dim=d, k=k, epochs=ep, calibration=calib)
        r = audit_encoding(cal, draws=args.draws, rng=SecretGenerator(0, warn=False))
        sec = time.time() - t
        rows["encoding"].append({**r.to_json(), "seconds": sec})
        print(f"| {kind} | {calib} | {eps:g} | {d} | {k} x {ep} | {cal.epsilon:.3g} | {r.eps_lb:.2f} | "
              f"{'**caught**' if r.violated else 'passes'} | {sec:.0f} |")
    from privnlu.mechanisms.dchi import load_token_space

    space, _ = load_token_space(None)
    pairs = pick_pairs(space, args.dchi_eta, 3)
    print(f"\nd_chi on the packaged MiniLM token embeddings, eta = {args.dchi_eta:g}\n")
    print("| mechanism | tokens | d(x, x') | claim eta d | eps_lb (95 %) | draws | verdict | seconds |\n|---|---|---|---|---|---|---|---|")
    for mech, draws in (("rep", args.draws), ("txt", args.draws // 5)):
        t = time.time()
        res = audit_dchi(space, args.dchi_eta, pairs, mechanism=mech, draws=draws, rng=SecretGenerator(0, warn=False))
        sec = (time.time() - t) / len(res)
        for r in res:
            rows["dchi"].append({**r.to_json(), "seconds": sec})
            print(f"| M_{mech} | {' / '.join(r.details['tokens'])} | {r.details['distance']:.3f} | {r.claimed_epsilon:.2f} | "
                  f"{r.eps_lb:.2f} | {draws:,} | {'**caught**' if r.violated else 'passes'} | {sec:.0f} |")
    if args.out:
        write_json_atomic(args.out, rows)
    print(json.dumps({"draws": args.draws}))


if __name__ == "__main__":
    main()
