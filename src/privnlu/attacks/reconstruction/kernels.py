"""Compiled products of the sparse symmetric NMF (optional: ``pip install privnlu[scale]`` brings numba).

Both products of :func:`~privnlu.attacks.reconstruction.sparse.nmf_sparse_factor` are needed only at the stored
entries of ``H`` (its fixed support, ``s`` groups per encoding):

* ``(A H)[i, j] = sum_{k in N(i)} A[i, k] H[k, j]`` for ``j`` in ``supp(i)``: a masked sparse product. scipy
  forms the whole row of ``A H`` (at n = 1,000 it covers 933 of the 1,000 groups) and reads ``s`` of it; here a
  group -> slot map of row ``i`` lets each neighbour's ``s`` entries add straight into row ``i``'s slots:
  ``|E| x s`` multiply-adds, no temporary.
* ``(H (H^T H))[i, j] = sum_{l in supp(i)} H[i, l] (H^T H)[l, j]``: ``s x s`` per row, from the dense G x G Gram
  matrix.

Rows run in parallel (numba ``prange``); every row writes only its own slots, so there are no races.
"""

from __future__ import annotations

import os

import numpy as np

try:
    import numba
    from numba import njit, prange

    if "NUMBA_THREADING_LAYER" not in os.environ:
        # numba's own pool: the OpenMP one spin-waits, so with 1 thread of 2 it burned 1.7 CPU-seconds a second
        numba.config.THREADING_LAYER = "workqueue"
    AVAILABLE = True
except ImportError:  # pragma: no cover - the scipy products are used instead
    AVAILABLE = False

ROWS_PER_TASK = 256

if AVAILABLE:

    @njit(parallel=True, cache=True, nogil=True)
    def _masked_product(a_ptr, a_idx, a_val, h_ptr, h_idx, h_val, groups, width, out):  # pragma: no cover - compiled
        n = len(h_ptr) - 1
        for t in prange((n + ROWS_PER_TASK - 1) // ROWS_PER_TASK):
            slot = np.full(groups, width, np.int64)  # a group outside the row's support adds into the spare slot
            acc = np.zeros(width + 1, out.dtype)
            for i in range(t * ROWS_PER_TASK, min(n, (t + 1) * ROWS_PER_TASK)):
                a, b = h_ptr[i], h_ptr[i + 1]
                for p in range(a, b):
                    slot[h_idx[p]] = p - a
                acc[:] = 0.0
                for q in range(a_ptr[i], a_ptr[i + 1]):
                    k, w = a_idx[q], a_val[q]
                    for r in range(h_ptr[k], h_ptr[k + 1]):
                        acc[slot[h_idx[r]]] += w * h_val[r]
                for p in range(a, b):
                    out[p] = acc[p - a]
                    slot[h_idx[p]] = width

    @njit(parallel=True, cache=True, nogil=True)
    def _gram_product(h_ptr, h_idx, h_val, gram, out):  # pragma: no cover - compiled
        n = len(h_ptr) - 1
        for i in prange(n):
            a, b = h_ptr[i], h_ptr[i + 1]
            for p in range(a, b):
                j = h_idx[p]
                s = 0.0
                for r in range(a, b):
                    s += h_val[r] * gram[h_idx[r], j]
                out[p] = s

    @njit(parallel=True, cache=True, nogil=True)
    def _gram_matrix(h_ptr, h_idx, h_val, groups, parts):  # pragma: no cover - compiled
        n = len(h_ptr) - 1
        step = (n + parts - 1) // parts
        acc = np.zeros((parts, groups, groups), h_val.dtype)
        for t in prange(parts):
            for i in range(t * step, min(n, (t + 1) * step)):
                a, b = h_ptr[i], h_ptr[i + 1]
                for p in range(a, b):
                    for r in range(a, b):
                        acc[t, h_idx[p], h_idx[r]] += h_val[p] * h_val[r]
        return acc.sum(0)


def _threads() -> int:
    """numba's pool follows ``torch.get_num_threads()``, as the scipy products do."""
    import torch

    threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads


def masked_product(A, H) -> np.ndarray:
    """``A H`` at H's stored entries, in ``H.data`` order (CSR ``A`` and ``H``, sorted or not)."""
    _threads()
    out = np.empty(H.nnz, dtype=H.dtype)
    width = int(np.diff(H.indptr).max(initial=0))
    _masked_product(A.indptr, A.indices, A.data.astype(H.dtype, copy=False), H.indptr, H.indices, H.data,
                    H.shape[1], width, out)
    return out


def gram_product(H) -> np.ndarray:
    """``H (H^T H)`` at H's stored entries, in ``H.data`` order (the G x G ``H^T H`` dense, one per thread
    while it is summed)."""
    threads = _threads()
    gram = _gram_matrix(H.indptr, H.indices, H.data, H.shape[1], threads)
    out = np.empty(H.nnz, dtype=H.dtype)
    _gram_product(H.indptr, H.indices, H.data, gram, out)
    return out
