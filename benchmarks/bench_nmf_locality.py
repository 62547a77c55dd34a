"""Benchmark: sparse-nmf iterations in the release's (shuffled) order against the locality order (encodings sorted by
their main group, ``reconstruction_sparse.locality_order``), in the same process, same products (compiled where
numba is installed).

    PYTHONPATH=src python benchmarks/bench_nmf_locality.py [--n 150000] [--groups 3000] [--degree 200]
        [--support 64] [--iters 3] [--threads 1]

The synthetic release is ``bench_sparse_nmf.py --clustered``'s: each encoding mixes 4 of ``--groups`` originals
and its neighbours share one of them, random affinities, rows in random order as in a shuffled release; the
starting ``H`` is ``nmf_sparse_start``'s from one seed group per original. Times ``--iters`` updates each way,
the one-time permutation included, checks that both give the same ``H`` (float32, 1e-4) and prints the ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from bench_sparse_nmf import add_release_args, clustered_start
from common import save
from privnlu.attacks import reconstruction_kernels as kernels
from privnlu.attacks import reconstruction_sparse as rs


def main() -> None:
    ap = argparse.ArgumentParser()
    add_release_args(ap, n=150000, groups=3000)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    n, g = args.n, args.groups
    A, start = clustered_start(args)
    if kernels.AVAILABLE:  # compile (or load numba's cache) outside the clock
        rs.nmf_sparse_factor(A, start.copy(), iters=1, reorder=False)
    seconds, results = {}, {}
    for reorder in (False, True):
        H = start.copy()
        t = time.perf_counter()
        results[reorder] = rs.nmf_sparse_factor(A, H, iters=args.iters, reorder=reorder).data
        seconds[reorder] = time.perf_counter() - t
    assert np.allclose(results[True], results[False], rtol=1e-4, atol=1e-7)
    save(f"nmf_locality_n{n}", {
        "n": n, "groups": g, "edges": A.nnz // 2, "support": args.support, "iters": args.iters,
        "compiled": kernels.AVAILABLE, "seconds_per_iteration": {"release_order": round(seconds[False] / args.iters, 2),
                                                                 "locality_order": round(seconds[True] / args.iters, 2)},
        "speedup": round(seconds[False] / seconds[True], 2)})


if __name__ == "__main__":
    main()
