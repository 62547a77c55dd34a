"""Benchmark: one sparse-nmf iteration with both products computed only on the support (privnlu), against the
full sparse products masked afterwards (the session-5 implementation), in the same process.

    PYTHONPATH=src python benchmarks/bench_sparse_nmf.py [--n 50000] [--groups 1000] [--degree 200] [--support 64]

Synthetic graph of the size of a 1,000-example x 50-encoding release with 200 neighbours per encoding (random
edges and affinities: the cost depends on the shapes, not on the values). Prints seconds per product and the
ratios; both give the same numbers (checked).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from privnlu.attacks import reconstruction_sparse as rs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--degree", type=int, default=200)
    ap.add_argument("--support", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    n, g = args.n, args.groups
    lo = np.repeat(np.arange(n), args.degree // 2)
    hi = rng.integers(0, n, len(lo))
    keep = lo != hi
    A = rs.sym_csr(np.minimum(lo, hi)[keep], np.maximum(lo, hi)[keep], rng.random(int(keep.sum())).astype(np.float32), n)
    A = A.astype(np.float64)
    member = rng.integers(0, g, (n, 4))
    seeds = [torch.from_numpy(np.nonzero((member == j).any(1))[0][:30]) for j in range(g)]
    S = rs.nmf_support(A, seeds, args.support)
    H = S.copy().astype(np.float64)
    H.data[:] = rng.random(H.nnz) + 1e-3
    slots = rs._padded_support(S)
    pattern = S.copy()
    pattern.data[:] = 1e-300
    t = time.perf_counter()
    num_ref = (A @ H + pattern).multiply(S).tocsr()
    num_ref.sort_indices()
    t_num_ref = time.perf_counter() - t
    t = time.perf_counter()
    den_ref = (H @ (H.T @ H) + pattern).multiply(S).tocsr()
    den_ref.sort_indices()
    t_den_ref = time.perf_counter() - t
    t = time.perf_counter()
    num = rs._product_on_support(A, H, S, slots[1])
    t_num = time.perf_counter() - t
    t = time.perf_counter()
    den = rs._gram_on_support(H, slots)
    t_den = time.perf_counter() - t
    assert np.allclose(num, num_ref.data) and np.allclose(den, den_ref.data)
    print(json.dumps({"n": n, "groups": g, "edges": A.nnz // 2, "support": args.support,
                      "A_H_seconds": {"full_then_masked": round(t_num_ref, 2), "on_support": round(t_num, 2),
                                      "ratio": round(t_num_ref / t_num, 2)},
                      "H_HtH_seconds": {"full_then_masked": round(t_den_ref, 2), "on_support": round(t_den, 2),
                                        "ratio": round(t_den_ref / t_den, 2)},
                      "iteration_ratio": round((t_num_ref + t_den_ref) / (t_num + t_den), 2)}, indent=1))


if __name__ == "__main__":
    main()
