"""Where one sparse-nmf iteration spends its time, kernel by kernel (compiled products; needs numba).

On ``bench_sparse_nmf.py``'s clustered synthetic release in locality order (as ``nmf_sparse_factor`` iterates),
one thread, best of ``--repeat``: the masked product ``A H``, the G x G Gram matrix ``H^T H`` and the Gram product
``H (H^T H)``; and that Gram product reading the symmetric Gram matrix by rows (``gram[j, l]`` for the row's
support ``l``, contiguous in memory) instead of by columns (``gram[l, j]``, a cache line per entry): the same sums
(checked equal), a candidate for a cache-friendly Gram product. Ratios, all in this process: each kernel's share of
the iteration (the sum of the three), and ``row_read_speedup``, the column-read Gram product over the row-read one.
Skips itself (one line) without numba. Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_nmf_kernels.py [--n 150000] [--groups 3000] [--repeat 2]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from bench_sparse_nmf import add_release_args, clustered_start
from common import best_of, save, skip
from privnlu.attacks.reconstruction import kernels
from privnlu.attacks.reconstruction import sparse as rs

if kernels.AVAILABLE:
    from numba import njit, prange

    @njit(parallel=True, cache=True, nogil=True)
    def gram_product_by_rows(h_ptr, h_idx, h_val, gram, out):  # pragma: no cover - compiled
        """``kernels._gram_product`` with ``gram[h_idx[p], h_idx[r]]`` for ``gram[h_idx[r], h_idx[p]]`` (symmetric)."""
        for i in prange(len(h_ptr) - 1):
            a, b = h_ptr[i], h_ptr[i + 1]
            for p in range(a, b):
                row = gram[h_idx[p]]
                s = 0.0
                for r in range(a, b):
                    s += h_val[r] * row[h_idx[r]]
                out[p] = s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_release_args(ap, n=150000, groups=3000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    if not kernels.AVAILABLE:
        skip("numba is not installed (pip install privnlu[scale])")
    torch.set_num_threads(1)
    n, g = args.n, args.groups
    A, H = clustered_start(args)
    order = rs.locality_order(H)
    A, H = A[order][:, order].astype(H.dtype), H[order]
    kernels._threads()
    gram = kernels._gram_matrix(H.indptr, H.indices, H.data, g, 1)
    by_cols, by_rows = np.empty(H.nnz, H.dtype), np.empty(H.nnz, H.dtype)
    seconds = {
        "masked_product_AH": best_of(lambda: kernels.masked_product(A, H), args.repeat),
        "gram_matrix_HtH": best_of(lambda: kernels._gram_matrix(H.indptr, H.indices, H.data, g, 1), args.repeat),
        "gram_product_by_columns": best_of(
            lambda: kernels._gram_product(H.indptr, H.indices, H.data, gram, by_cols), args.repeat),
        "gram_product_by_rows": best_of(
            lambda: gram_product_by_rows(H.indptr, H.indices, H.data, gram, by_rows), args.repeat),
    }
    assert np.allclose(by_cols, by_rows, rtol=1e-5)
    iteration = seconds["masked_product_AH"] + seconds["gram_matrix_HtH"] + seconds["gram_product_by_columns"]
    save("nmf_kernels", reference="one iteration (the three kernels' sum); the Gram product reading by columns",
         ratios={**{f"share_{k}": seconds[k] / iteration for k in ("masked_product_AH", "gram_matrix_HtH",
                                                                   "gram_product_by_columns")},
                 "row_read_speedup": seconds["gram_product_by_columns"] / seconds["gram_product_by_rows"]},
         n=n, groups=g, edges=A.nnz // 2, support=args.support, seconds=seconds)

if __name__ == "__main__":
    main()
