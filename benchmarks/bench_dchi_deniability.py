"""Plausible deniability (N_w, S_w) throughput against its matrix-product bound and against full search.

For a sample of ``--words`` regular tokens with ``--draws`` draws each (one noise
bank, as in :func:`privnlu.mechanisms.dchi_stats.plausible_deniability`), this times,
in the same process:

* the fast exact path (``min_plus_argmin``: candidates + masked log-sum-exp certificate);
* its floating-point bound: the three float32 products it cannot avoid,
  ``A = E_W E^T`` (2 W n V flops), ``B = 2 N E^T`` (2 J n V) and the mass product
  ``F_A F_B^T`` (2 W J V), timed as plain ``torch.mm`` calls of the same shapes;
* full min-plus search (``brute_min_plus_argmin``, memory-bound, V operations per pair),
  timed on ``--brute-words`` words and extrapolated;
* the naive exact route, one nearest-neighbour matmul per noisy query (2 n V flops
  per pair), extrapolated from the measured GFLOP/s.

and extrapolates each to the whole regular vocabulary.

Usage: PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_dchi_deniability.py --eta 65.55 [--words 1024]
"""

from __future__ import annotations

import argparse
import time

import torch

from privnlu.mechanisms.dchi import dchi_noise, load_token_space
from privnlu.mechanisms.dchi_stats import MinPlusStats, brute_min_plus_argmin, min_plus_argmin
from privnlu.rng import SecretGenerator


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
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
    t_brute, ref = timed(lambda: brute_min_plus_argmin(a[: args.brute_words], b))
    assert torch.equal(ref, out[: args.brute_words]), "fast path disagrees with full search"
    pairs = args.words * args.draws
    flops = 2.0 * args.words * n * v + 2.0 * args.draws * n * v + 2.0 * pairs * v
    t_bound = t_a + t_bank + t_mass
    gflops = 2.0 * pairs * v / t_mass / 1e9
    scale = v / args.words  # whole vocabulary, one bank per chunk of `words`
    t_chunk = t_bank + t_a + t_fast
    t_brute_chunk = t_bank + t_a + t_brute / args.brute_words * args.words
    t_naive = 2.0 * n * v * pairs / (gflops * 1e9)
    print(f"threads={torch.get_num_threads()}  V={v}  n={n}  eta={args.eta}  words={args.words}  draws={args.draws}")
    print(f"steps: certified {stats.certified / pairs:.4f}, second stage {stats.stage2 / pairs:.4f}, full search {stats.brute / pairs:.4f}")
    print(f"chunk: fast {t_chunk:.2f} s = {t_chunk / t_bound:.2f} x its matmul bound {t_bound:.2f} s "
          f"({flops / 1e9:.0f} GFLOP at {flops / t_bound / 1e9:.1f} GFLOP/s)")
    print(f"whole vocabulary ({v} words x {args.draws} draws), extrapolated: fast {t_chunk * scale / 60:.1f} min | "
          f"matmul bound {t_bound * scale / 60:.1f} min | full min-plus search {t_brute_chunk * scale / 60:.1f} min "
          f"({t_brute_chunk / t_chunk:.1f}x slower) | one NN matmul per noisy query {t_naive * scale / 3600:.1f} h")


if __name__ == "__main__":
    main()
