"""The reconstruction attack at the size of a real release: pairs from a k-nearest-neighbour graph.

Scoring every pair costs ``N^2`` (25M pairs at 5,000 encodings, 2.5G at 50,000). Encodings that share an
original are near each other in the ``|e|`` features, so the attacker only scores the pairs of a FAISS
k-nearest-neighbour graph of those features (exact inner product on unit vectors, ``faiss.IndexFlatIP``,
searched in blocks), symmetrised: ``E <= N * neighbours`` edges. Memory is ``O(E + N * support)``:

* pair scores on the edges (:func:`score_edges`) with the same networks as the all-pairs attack;
* the paper's greedy clustering reads the graph's rows (:func:`csr_rows`; a pair that is not an edge has
  similarity 0);
* clique growth (:func:`clique_sparse`, the seeds of nmf): a pair that is not an edge scores ``-inf``, so a group
  is a clique of the graph; its candidates are the common neighbours of the members;
* symmetric NMF (``H <- H o (1/2 + 1/2 (A H) / (H H^T H))``, privnlu's clustering) with the affinity ``A``
  restricted to the edges and ``H`` restricted to a fixed support of ``support`` groups per encoding, the
  groups of its seed and of its neighbours (:func:`nmf_sparse`): the multiplicative update keeps zeros at
  zero, so the support is fixed from the start, and both products are computed only on it (a block of rows
  at a time for ``A H``; a block of rows of ``H`` times the small G x G ``H^T H`` for the denominator; the
  blocks on ``torch.get_num_threads()`` threads). With the complete graph and full
  support it is the all-pairs :func:`~privnlu.attacks.reconstruction.attack.nmf_clusters` exactly.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
import torch

from .paper import Rows


def knn_graph(feats: torch.Tensor, neighbours: int, *, block: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetrised k-NN graph of ``feats`` by cosine: (rows, cols, cosines) of the edges i < j."""
    import faiss

    x = np.ascontiguousarray(torch.nn.functional.normalize(feats.float(), dim=1).numpy())
    n = len(x)
    kk = min(neighbours + 1, n)
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    rows, cols = [], []
    for s in range(0, n, block):
        _, idx = index.search(x[s : s + block], kk)
        r = np.repeat(np.arange(s, s + len(idx)), kk)
        c = idx.reshape(-1)
        ok = (c >= 0) & (c != r)
        rows.append(r[ok])
        cols.append(c[ok])
    r, c = np.concatenate(rows), np.concatenate(cols)
    lo, hi = np.minimum(r, c), np.maximum(r, c)
    key = np.unique(lo.astype(np.int64) * n + hi)
    lo, hi = key // n, key % n
    return lo, hi, _rowdot(x, lo, hi)


def _rowdot(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``x[lo] . x[hi]`` per edge, in chunks: gathering all rows at once costs 2 d floats per edge (3 GiB for
    1M edges at d = 384)."""
    out = np.empty(len(lo), dtype=np.float32)
    for s in range(0, len(lo), chunk):
        out[s : s + chunk] = np.einsum("ij,ij->i", x[lo[s : s + chunk]], x[hi[s : s + chunk]])
    return out


def complete_graph(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All pairs i < j (for tests and small releases)."""
    lo, hi = np.triu_indices(n, 1)
    return lo.astype(np.int64), hi.astype(np.int64)


@torch.no_grad()
def score_edges(net, feats: torch.Tensor, lo: np.ndarray, hi: np.ndarray, *, chunk: int = 65536) -> np.ndarray:
    """Symmetrised logits of the edges, from per-encoding projections (``net`` a PairScorer or a PairMLP)."""
    from .paper import PairMLP

    out = np.empty(len(lo), dtype=np.float32)
    if isinstance(net, PairMLP):
        u, v = net.project(feats)
        for s in range(0, len(lo), chunk):
            i, j = torch.from_numpy(lo[s : s + chunk]), torch.from_numpy(hi[s : s + chunk])
            out[s : s + chunk] = net.score_pairs(u[i], v[i], u[j], v[j]).numpy()
        return out
    ua, vb, pa, qb = net.u(feats), net.v(feats), net.p(feats), net.q(feats)
    w, w0 = net.w.weight[0], net.w.bias[0]
    for s in range(0, len(lo), chunk):
        i, j = torch.from_numpy(lo[s : s + chunk]), torch.from_numpy(hi[s : s + chunk])
        ab = torch.relu(ua[i] + vb[j]) @ w + (pa[i] * qb[j]).sum(-1)
        ba = torch.relu(ua[j] + vb[i]) @ w + (pa[j] * qb[i]).sum(-1)
        out[s : s + chunk] = (0.5 * (ab + ba) + w0).numpy()
    return out


def sym_csr(lo: np.ndarray, hi: np.ndarray, values: np.ndarray, n: int) -> sp.csr_matrix:
    """The symmetric (n, n) matrix with ``values`` on the edges (i, j) and (j, i)."""
    m = sp.coo_matrix((np.concatenate([values, values]), (np.concatenate([lo, hi]), np.concatenate([hi, lo]))), shape=(n, n))
    out = m.tocsr()
    out.sum_duplicates()
    out.sort_indices()
    return out


def csr_rows(m: sp.csr_matrix) -> Rows:
    """Row access for :func:`~privnlu.attacks.reconstruction.paper.paper_greedy_clusters`."""
    indptr, indices, data = m.indptr, m.indices, m.data
    return lambda j: (indices[indptr[j] : indptr[j + 1]], data[indptr[j] : indptr[j + 1]])


def clique_sparse(logits: sp.csr_matrix, n: int, k: int, size: int, threshold: float = 0.0) -> list[torch.Tensor]:
    """:func:`~privnlu.attacks.reconstruction.attack.clique_clusters` on a graph (``logits``: symmetric, sorted CSR, no
    diagonal): from a seed, add the candidate whose smallest score to the members is largest while it exceeds
    ``threshold``; the candidates start as the seed's neighbours and shrink to the neighbours of each new member,
    so a group costs ``O(size * degree)``. Same seeds and order as the dense rule; on the complete graph it returns
    the same groups."""
    n_enc = logits.shape[0]
    indptr, indices, data = logits.indptr, logits.indices, logits.data
    degree = np.bincount(np.repeat(np.arange(n_enc), np.diff(indptr)), weights=data > threshold, minlength=n_enc)
    count = np.zeros(n_enc, dtype=np.int64)
    used_seed = np.zeros(n_enc, dtype=bool)
    clusters: list[torch.Tensor] = []
    while len(clusters) < n:
        free = (count < k) & ~used_seed
        if not free.any():
            break
        seed = int(np.argmin(np.where(free, count * (n_enc + 1) - degree, np.inf)))
        used_seed[seed] = True
        members = [seed]
        a, b = indptr[seed], indptr[seed + 1]
        keep = count[indices[a:b]] < k
        cand, worst = indices[a:b][keep], data[a:b][keep].astype(np.float64)
        while len(members) < size and len(cand):
            best = int(np.argmax(worst))
            if not worst[best] > threshold:
                break
            j = int(cand[best])
            members.append(j)
            row_c, row_v = indices[indptr[j] : indptr[j + 1]], data[indptr[j] : indptr[j + 1]]
            pos = np.minimum(np.searchsorted(row_c, cand), max(len(row_c) - 1, 0))
            hit = (row_c[pos] == cand) if len(row_c) else np.zeros(len(cand), dtype=bool)
            cand, worst = cand[hit], np.minimum(worst[hit], row_v[pos[hit]])
        idx = torch.tensor(members)
        clusters.append(idx)
        count[idx.numpy()] += 1
    return clusters


def _membership(clusters: list[torch.Tensor], n_enc: int) -> sp.csr_matrix:
    rows = np.concatenate([c.numpy() for c in clusters]) if clusters else np.zeros(0, dtype=np.int64)
    cols = np.concatenate([np.full(len(c), g) for g, c in enumerate(clusters)]) if clusters else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n_enc, len(clusters)))


def nmf_support(affinity: sp.csr_matrix, seeds: list[torch.Tensor], support: int) -> sp.csr_matrix:
    """0/1 pattern (N, groups): per encoding, the ``support`` groups most present among itself (weighted 2)
    and its graph neighbours."""
    n_enc, g = affinity.shape[0], len(seeds)
    M = _membership(seeds, n_enc)
    votes = ((affinity > 0).astype(np.float64) @ M + 2 * M).tocsr()
    if support >= g:
        return sp.csr_matrix(np.ones((n_enc, g)))
    rows, cols = [], []
    for i in range(n_enc):
        a, b = votes.indptr[i], votes.indptr[i + 1]
        c, v = votes.indices[a:b], votes.data[a:b]
        if len(c) > support:
            c = c[np.argpartition(-v, support - 1)[:support]]
        rows.append(np.full(len(c), i))
        cols.append(c)
    r, c = np.concatenate(rows), np.concatenate(cols)
    out = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n_enc, g))
    out.sort_indices()
    return out


def _chunks(n: int, chunk: int) -> list[tuple[int, int]]:
    return [(s, min(n, s + chunk)) for s in range(0, n, chunk)]


def _map_chunks(fn, n: int, chunk: int, out: np.ndarray) -> np.ndarray:
    """``fn(s, e)`` for each block of rows, on ``torch.get_num_threads()`` threads (scipy's sparse products and
    numpy's batched matmul release the GIL: 1.55x on 2 busy cores at n = 1,000), concatenated into ``out``."""
    blocks = _chunks(n, chunk)
    threads = max(1, min(torch.get_num_threads(), len(blocks)))
    if threads == 1:
        parts = [fn(s, e) for s, e in blocks]
    else:
        with ThreadPoolExecutor(threads) as pool:
            parts = list(pool.map(lambda b: fn(*b), blocks))
    return np.concatenate(parts, out=out) if parts else out


def _product_on_support(A: sp.csr_matrix, H: sp.csr_matrix, rows: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """``A H`` at H's own entries (CSR order), a block of rows at a time: no N x G temporary."""

    def block(s: int, e: int) -> np.ndarray:
        a, b = H.indptr[s], H.indptr[e]
        return (A[s:e] @ H).toarray()[rows[a:b] - s, H.indices[a:b]]

    return _map_chunks(block, H.shape[0], chunk, np.empty(H.nnz, dtype=H.dtype))


def _gram_on_support(H: sp.csr_matrix, rows: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """``H (H^T H)`` at H's own entries, in ``H.data`` order: the G x G Gram matrix is small (G = the number of
    groups), so a block of rows of ``H`` (sparse) times it (dense), read at the block's support, a block at a time
    (1.9x the per-row w x w gather it replaces at n = 1,000; no N x G temporary)."""
    gram = (H.T @ H).toarray()

    def block(s: int, e: int) -> np.ndarray:
        a, b = H.indptr[s], H.indptr[e]
        return (H[s:e] @ gram)[rows[a:b] - s, H.indices[a:b]]

    return _map_chunks(block, H.shape[0], chunk, np.empty(H.nnz, dtype=H.dtype))


def _assign(H: sp.csr_matrix, W: sp.csr_matrix) -> None:
    """``H[i, j] = W[i, j]`` at every stored entry of ``W`` (whose pattern lies within H's), in place."""
    W = W.tocsr()
    W.sort_indices()
    g = H.shape[1]
    key = lambda m: np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr)) * g + m.indices
    H.data[np.searchsorted(key(H), key(W))] = W.data


def nmf_sparse_start(affinity: sp.csr_matrix, seeds: list[torch.Tensor], support: int, *, dtype: type = np.float32,
                     warm: sp.csr_matrix | None = None, fresh: list[int] | None = None) -> sp.csr_matrix:
    """The starting ``H`` on its support (:func:`nmf_support`): 0.001, seed members 0.1, as the dense version.
    ``warm``: an earlier ``H`` of the same groups; every group not in ``fresh`` keeps its values where the new
    support has them (0.001 elsewhere), and only the ``fresh`` groups start from their seeds."""
    S = nmf_support(affinity, seeds, support)
    H = S.astype(dtype)
    H.data[:] = 0.001
    restart = np.ones(len(seeds), dtype=dtype)
    if warm is not None:
        restart[:] = 0
        restart[list(fresh or [])] = 1
        W = warm.tocsr().multiply(S) @ sp.diags(1 - restart)
        W.eliminate_zeros()
        _assign(H, W)
    M = (_membership(seeds, S.shape[0]).astype(dtype) @ sp.diags(restart)).multiply(S).tocsr()
    M.eliminate_zeros()
    M.data[:] = 0.1
    _assign(H, M)
    return H


def locality_order(H: sp.csr_matrix) -> np.ndarray:
    """Encodings sorted by their main group (the largest entry of their row of ``H``; stable). A release is
    shuffled, so in its own order consecutive rows of ``A H`` read unrelated rows of ``H``; in this order they
    share their graph neighbours and read the same ones (``A H`` 1.1-1.2x). Their 64-group supports stay spread
    over the groups, so the Gram kernels gain nothing (``benchmarks/bench_nmf_locality.py``)."""
    main = np.asarray(H.argmax(axis=1)).ravel()
    return np.argsort(main, kind="stable")


def nmf_sparse_factor(affinity: sp.csr_matrix, H: sp.csr_matrix, *, iters: int = 150,
                      reorder: bool = True) -> sp.csr_matrix:
    """``iters`` multiplicative updates of ``H`` (in place, on its own support); ``H``'s dtype sets the products'.
    ``float32`` by default: the products are memory-bound, and single precision moves half the bytes (1.41x per
    iteration at 50,000 encodings, ``benchmarks/bench_sparse_nmf.py``); the update is a ratio of two positive sums,
    which float32 keeps to about 1e-6 relative. ``reorder``: iterate on the rows and columns of ``A`` and the rows
    of ``H`` permuted by :func:`locality_order` (the same update, only summed in another order;
    ``benchmarks/bench_nmf_locality.py``), and write the result back in the release's order."""
    from . import kernels

    A = affinity.astype(H.dtype, copy=False)
    order = locality_order(H) if reorder and iters > 0 else None
    work = H
    if order is not None:
        A, work = A[order][:, order], H[order]
    # the row of every stored entry, CSR order: only the scipy products read it
    rows = None if kernels.AVAILABLE else np.repeat(np.arange(work.shape[0]), np.diff(work.indptr))
    for _ in range(iters):
        if kernels.AVAILABLE:  # the same products, compiled (faster per iteration: benchmarks/bench_nmf_kernels.py)
            num, den = kernels.masked_product(A, work), kernels.gram_product(work)
        else:
            num, den = _product_on_support(A, work, rows), _gram_on_support(work, rows)
        work.data *= (0.5 + 0.5 * num / np.maximum(den, 1e-12)).astype(work.dtype, copy=False)
    if order is not None:  # row slicing keeps each row's entries in order, so the data line up with H's
        H.data[:] = work[np.argsort(order)].data
    return H


def sparse_top_members(H: sp.csr_matrix, size: int) -> list[torch.Tensor]:
    """Group j: the ``size`` encodings with the largest ``H[:, j]`` (sorted ids)."""
    Hc = H.tocsc()
    out = []
    for j in range(Hc.shape[1]):
        a, b = Hc.indptr[j], Hc.indptr[j + 1]
        rows, vals = Hc.indices[a:b], Hc.data[a:b]
        top = rows[np.argsort(-vals, kind="stable")[:size]]
        out.append(torch.from_numpy(np.sort(top).astype(np.int64)))
    return out


def nmf_sparse(affinity: sp.csr_matrix, seeds: list[torch.Tensor], size: int, *, iters: int = 150,
               support: int = 64, dtype: type = np.float32) -> list[torch.Tensor]:
    """Symmetric NMF on a sparse affinity with ``H`` on a fixed sparse support (module docstring), from the seeds."""
    H = nmf_sparse_factor(affinity, nmf_sparse_start(affinity, seeds, support, dtype=dtype), iters=iters)
    return sparse_top_members(H, size)
