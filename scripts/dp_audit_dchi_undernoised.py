"""How strongly must d_chi be under-noised for the audit to catch it on a real model? (docs/dp_encoding.md)

    PYTHONPATH=src OMP_NUM_THREADS=1 python scripts/dp_audit_dchi_undernoised.py [--eta 5] [--draws 100000]

M_rep on the packaged MiniLM token embeddings (d = 384) at the claimed eta, drawn at factor x eta (seed 0).
"""

from __future__ import annotations

import argparse

from privnlu.attacks.dp_audit import audit_dchi, pick_pairs
from privnlu.mechanisms.dchi import load_token_space, m_rep
from privnlu.rng import SecretGenerator


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eta", type=float, default=5.0)
    ap.add_argument("--draws", type=int, default=100_000)
    args = ap.parse_args()
    space, _ = load_token_space(None)
    pairs = pick_pairs(space, args.eta, 1)
    print("| noise factor (draws at factor x eta) | claim eta d | eps_lb (95 %) | verdict |\n|---|---|---|---|")
    for factor in (1, 2, 3, 5, 10, 30, 100):
        def sampler(sp, ids, e, g, f=factor):
            return m_rep(sp, ids, f * e, g)

        [r] = audit_dchi(space, args.eta, pairs, mechanism="rep", draws=args.draws, rng=SecretGenerator(0, warn=False),
                         sampler=sampler)
        print(f"| {factor} | {r.claimed_epsilon:.2f} | {r.eps_lb:.2f} | {'**caught**' if r.violated else 'passes'} |")


if __name__ == "__main__":
    main()
