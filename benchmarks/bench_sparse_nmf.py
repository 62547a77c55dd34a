"""One sparse-nmf iteration (both products computed only on the support) against the full sparse products masked
afterwards, in the same process.

The reconstruction attack's sparse nmf (:mod:`privnlu.attacks.reconstruction.sparse`) updates ``H`` only on its
support, so it needs ``A H`` and ``H (H^T H)`` only there. Ratios, all against references timed in this process
(both give the same numbers, checked):

* ``iteration_speedup_1_thread`` / ``iteration_speedup_threads``: the full sparse products masked afterwards (the
  straightforward reference implementation) over the on-support products, on 1 and on ``--threads`` threads;
* ``gram_speedup_vs_per_row_blocks``: the per-row Gram-block denominator (a w x w block of ``H^T H`` gathered per
  row) over the on-support one, 1 thread;
* ``float32_speedup_vs_float64``: the same products in float32 (nmf_sparse's default) over float64, ``--threads``;
* ``compiled_speedup_vs_float32``: the compiled products (``privnlu.attacks.reconstruction.kernels``, numba;
  absent without numba) over float32 scipy.

Synthetic graph of the size of a 1,000-example x 50-encoding release with 200 neighbours per encoding by default
(random edges and affinities: the cost depends on the shapes, not on the values). ``--clustered``: each encoding
mixes 4 of ``--groups`` originals and its neighbours share one of them, as in a real release (random affinities
still), so that neighbours' supports overlap as they do there. Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_sparse_nmf.py [--n 50000] [--groups 1000]
        [--degree 200] [--support 64] [--threads 2] [--clustered]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
import torch

from common import save
from privnlu.attacks.reconstruction import kernels
from privnlu.attacks.reconstruction import sparse as rs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_release_args(ap, n=50000, groups=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clustered", action="store_true", help="neighbours share an original (see the docstring)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    n, g = args.n, args.groups
    A, member = synthetic_graph(rng, n, g, args.degree, clustered=args.clustered)
    A = A.astype(np.float64)
    member = rng.integers(0, g, (n, 4)) if member is None else member
    seeds = [torch.from_numpy(np.nonzero((member == j).any(1))[0][:30]) for j in range(g)]
    S = rs.nmf_support(A, seeds, args.support)
    H = S.copy().astype(np.float64)
    H.data[:] = rng.random(H.nnz) + 1e-3
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
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
    den_blocks = _gram_per_row_blocks(H)
    t_den_blocks = time.perf_counter() - t
    timed = {}
    for threads in (1, args.threads):
        torch.set_num_threads(threads)
        t = time.perf_counter()
        num = rs._product_on_support(A, H, rows)
        t_num = time.perf_counter() - t
        t = time.perf_counter()
        den = rs._gram_on_support(H, rows)
        timed[threads] = (t_num, time.perf_counter() - t)
        assert np.allclose(num, num_ref.data) and np.allclose(den, den_ref.data) and np.allclose(den, den_blocks)
    # single precision (nmf_sparse's default): the same products on float32 copies
    A32, H32 = A.astype(np.float32), H.astype(np.float32)
    t = time.perf_counter()
    num32 = rs._product_on_support(A32, H32, rows)
    t_num32 = time.perf_counter() - t
    t = time.perf_counter()
    den32 = rs._gram_on_support(H32, rows)
    t_den32 = time.perf_counter() - t
    assert np.allclose(num32, num_ref.data, rtol=1e-4) and np.allclose(den32, den_ref.data, rtol=1e-4)
    (n1, d1), (nt, dt) = timed[1], timed[args.threads]
    ratios = {"iteration_speedup_1_thread": (t_num_ref + t_den_ref) / (n1 + d1),
              "iteration_speedup_threads": (t_num_ref + t_den_ref) / (nt + dt),
              "gram_speedup_vs_per_row_blocks": t_den_blocks / d1,
              "float32_speedup_vs_float64": (nt + dt) / (t_num32 + t_den32)}
    seconds = {"full_then_masked": {"A_H": t_num_ref, "H_HtH": t_den_ref}, "per_row_blocks_H_HtH": t_den_blocks,
               "on_support_1_thread": {"A_H": n1, "H_HtH": d1}, "on_support_threads": {"A_H": nt, "H_HtH": dt},
               "float32_threads": {"A_H": t_num32, "H_HtH": t_den32}}
    if kernels.AVAILABLE:
        kernels.masked_product(A32, H32), kernels.gram_product(H32)  # compile (or load numba's cache) first
        t = time.perf_counter()
        numc = kernels.masked_product(A32, H32)
        t_numc = time.perf_counter() - t
        t = time.perf_counter()
        denc = kernels.gram_product(H32)
        t_denc = time.perf_counter() - t
        assert np.allclose(numc, num32, rtol=1e-4) and np.allclose(denc, den32, rtol=1e-4)
        ratios["compiled_speedup_vs_float32"] = (t_num32 + t_den32) / (t_numc + t_denc)
        seconds["compiled_float32_threads"] = {"A_H": t_numc, "H_HtH": t_denc}
    save("sparse_nmf" + ("_clustered" if args.clustered else ""),
         reference="the full sparse products masked afterwards (and the per-row Gram blocks; float64; scipy)",
         ratios=ratios, n=n, groups=g, edges=A.nnz // 2, support=args.support, threads=args.threads,
         clustered=args.clustered, compiled=kernels.AVAILABLE, seconds=seconds)

def add_release_args(ap: argparse.ArgumentParser, *, n: int, groups: int) -> None:
    """The synthetic release's size options, shared by the nmf benchmarks."""
    ap.add_argument("--n", type=int, default=n)
    ap.add_argument("--groups", type=int, default=groups)
    ap.add_argument("--degree", type=int, default=200)
    ap.add_argument("--support", type=int, default=64)


def clustered_start(args: argparse.Namespace) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The clustered synthetic release of ``args`` (seed 0) and ``nmf_sparse_start``'s ``H`` from one seed group of
    50 encodings per original."""
    A, member = synthetic_graph(np.random.default_rng(0), args.n, args.groups, args.degree, clustered=True)
    seeds = [torch.from_numpy(np.nonzero(member[:, 0] == j)[0][:50]) for j in range(args.groups)]
    return A, rs.nmf_sparse_start(A, seeds, args.support)


def synthetic_graph(rng: np.random.Generator, n: int, groups: int, degree: int, *,
                    clustered: bool) -> tuple[sp.csr_matrix, np.ndarray | None]:
    """A symmetric float32 affinity on ``n`` encodings with ``degree / 2`` random edges drawn per encoding and
    random values; ``clustered``: each encoding mixes 4 of ``groups`` originals (returned) and its edges go to
    encodings that share one of them, else the edges are uniform (no originals: None)."""
    lo = np.repeat(np.arange(n), degree // 2)
    member = np.stack([rng.choice(groups, 4, replace=False) for _ in range(n)]) if clustered else None
    hi = _clustered_neighbours(rng, member, degree // 2) if clustered else rng.integers(0, n, len(lo))
    keep = lo != hi
    A = rs.sym_csr(np.minimum(lo, hi)[keep], np.maximum(lo, hi)[keep], rng.random(int(keep.sum())).astype(np.float32), n)
    return A, member


def _clustered_neighbours(rng: np.random.Generator, member: np.ndarray, per_row: int) -> np.ndarray:
    """``per_row`` neighbours of each encoding, drawn among the encodings that share one of its 4 originals
    (``member``: (N, 4) original ids)."""
    n, originals = len(member), int(member.max()) + 1
    order = np.argsort(member.ravel(), kind="stable")
    owners = order // 4  # encodings, grouped by original
    starts = np.searchsorted(member.ravel()[order], np.arange(originals + 1))
    which = member[np.arange(n).repeat(per_row), rng.integers(0, 4, n * per_row)]
    lo, hi = starts[which], starts[which + 1]
    return owners[lo + (rng.random(n * per_row) * (hi - lo)).astype(np.int64)]


def _gram_per_row_blocks(H, chunk: int = 4096) -> np.ndarray:
    """The per-row Gram-block denominator: each row's w x w block of ``H^T H``, gathered, times the row (reference
    only)."""
    counts = np.diff(H.indptr)
    rows = np.repeat(np.arange(H.shape[0]), counts)
    slot = np.arange(H.nnz) - np.repeat(H.indptr[:-1], counts)
    ids = np.full((H.shape[0], max(int(counts.max(initial=0)), 1)), H.shape[1], dtype=np.int64)
    ids[rows, slot] = H.indices
    g = H.shape[1]
    gram = np.zeros((g + 1, g + 1))
    gram[:g, :g] = (H.T @ H).toarray()
    vals = np.zeros(ids.shape)
    vals[rows, slot] = H.data
    out = np.empty(ids.shape)
    for s in range(0, len(ids), chunk):
        i = ids[s : s + chunk]
        out[s : s + chunk] = np.matmul(vals[s : s + chunk, None, :], gram[i[:, :, None], i[:, None, :]])[:, 0, :]
    return out[rows, slot]

if __name__ == "__main__":
    main()
