"""Plausible deniability (N_w, S_w) speed against its matrix-product bound, full min-plus search and one
nearest-neighbour product per noisy query.

For a sample of ``--words`` regular tokens with ``--draws`` draws each (one noise bank, as in
:func:`privnlu.mechanisms.dchi_stats.plausible_deniability`), this times, in the same process, the fast exact path
(``min_plus_argmin``: candidates + masked log-sum-exp certificate, plus the noise bank and distances it needs) and
three references:

* ``ratio_to_matmul_bound``: the fast path over its floating-point bound, the three float32 products it cannot
  avoid (``A = E_W E^T``, ``B = 2 N E^T`` and the mass product ``F_A F_B^T``) timed as plain matrix products of the
  same shapes (1.0 would be the bound);
* ``speedup_vs_full_search``: full min-plus search (``brute_min_plus_argmin``, memory-bound, V operations per
  pair; timed on ``--brute-words`` words and scaled; also checked to agree) over the fast path;
* ``speedup_vs_nn_matmul_per_query``: the naive exact route, one nearest-neighbour product per noisy query (2 n V
  flops per pair at the GFLOP/s measured for the mass product), over the fast path.

Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_dchi_deniability.py [--eta 65.55] [--words 1024]
        [--draws 1000] [--brute-words 32]
"""

from __future__ import annotations

import argparse

import torch

from common import save, timed
from privnlu.mechanisms.dchi import dchi_noise, load_token_space
from privnlu.mechanisms.dchi_stats import MinPlusStats, brute_min_plus_argmin, min_plus_argmin
from privnlu.rng import SecretGenerator


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eta", type=float, default=65.55)
    ap.add_argument("--words", type=int, default=1024)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--brute-words", type=int, default=32)
    args = ap.parse_args()
    space, _ = load_token_space()
    e, sq = space.regular, space.regular_sq
    v, n = e.shape
    rng = SecretGenerator(0, warn=False)
    rows = rng.choice(v, args.words)
    t_bank, b = timed(lambda: 2.0 * (dchi_noise(args.draws, n, args.eta, rng) @ e.T))
    t_a, a = timed(lambda: torch.addmm(sq.unsqueeze(0), e[rows], e.T, beta=1.0, alpha=-2.0))
    stats = MinPlusStats()
    t_fast, out = timed(lambda: min_plus_argmin(a, b, stats=stats))
    t_mass, _ = timed(lambda: a @ b.T)  # same shape as the certificate's mass product
    brute = min(args.brute_words, args.words)
    t_brute, ref = timed(lambda: brute_min_plus_argmin(a[:brute], b))
    assert torch.equal(ref, out[:brute]), "fast path disagrees with full search"
    pairs = args.words * args.draws
    t_bound = t_a + t_bank + t_mass
    t_chunk = t_bank + t_a + t_fast
    t_brute_chunk = t_bank + t_a + t_brute / brute * args.words
    t_naive = 2.0 * n * v * pairs / (2.0 * pairs * v / t_mass)  # at the mass product's flop rate
    save("dchi_deniability", reference="three plain float32 matrix products of the fast path's shapes (bound); full "
                                       "min-plus search; one nearest-neighbour product per noisy query",
         ratios={"ratio_to_matmul_bound": t_chunk / t_bound, "speedup_vs_full_search": t_brute_chunk / t_chunk,
                 "speedup_vs_nn_matmul_per_query": t_naive / t_chunk},
         vocabulary=v, dim=n, eta=args.eta, words=args.words, draws=args.draws, brute_words=brute,
         steps={"certified": stats.certified / pairs, "second_stage": stats.stage2 / pairs, "full_search": stats.brute / pairs},
         seconds={"fast_path": t_chunk, "matmul_bound": t_bound, "full_search_scaled": t_brute_chunk,
                  "nn_matmul_per_query_estimated": t_naive})


if __name__ == "__main__":
    main()
