"""Sparse-nmf iterations in the release's (shuffled) order against the locality order, in the same process.

The locality order (``reconstruction.sparse.locality_order``) sorts encodings by their main group, so that the
products touch memory in runs; ``nmf_sparse_factor`` uses it. The synthetic release is
``bench_sparse_nmf.py --clustered``'s: each encoding mixes 4 of ``--groups`` originals and its neighbours share one
of them, random affinities, rows in random order as in a shuffled release; the starting ``H`` is
``nmf_sparse_start``'s from one seed group per original. Times ``--iters`` updates each way (compiled products where
numba is installed), the one-time permutation included, and checks that both give the same ``H`` (float32, 1e-4).
Ratio: ``speedup``, the release order's time over the locality order's. Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_nmf_locality.py [--n 150000] [--groups 3000]
        [--degree 200] [--support 64] [--iters 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from bench_sparse_nmf import add_release_args, clustered_start
from common import save
from privnlu.attacks.reconstruction import kernels
from privnlu.attacks.reconstruction import sparse as rs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    save("nmf_locality", reference="the same nmf iterations in the release's (shuffled) order",
         ratios={"speedup": seconds[False] / seconds[True]},
         n=n, groups=g, edges=A.nnz // 2, support=args.support, iters=args.iters, threads=args.threads,
         compiled=kernels.AVAILABLE, seconds={"release_order": seconds[False], "locality_order": seconds[True]})

if __name__ == "__main__":
    main()
