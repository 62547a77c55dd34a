"""Success of a reconstruction, three ways (auditor side: needs the release key), and the pair network's
accuracy on the real release.

Group ``c``'s true original ``t(c)`` is the private example most of its members contain. Original ``i``
counts as recovered, under each metric, when some group with ``t(c) = i`` passes the test:

* **lenient** (the metric of privnlu's earlier tables, and the one our Table 1 rows are compared with): the
  nearest of the ``n`` private originals to the recovered vector (cosine between absolute values) is ``i``;
* **strict**: the nearest among the private originals plus ``D >= 5,000`` distractors from the same split
  (examples that are not private) is ``i``;
* **sentence**: the nearest sentence of the whole candidate corpus (cosine between absolute values) is the
  true sentence (string equality, so a duplicate sentence counts).

The paper (Xie & Hong 2021, section 5) reports "the percentage of reconstructed data out of the original
data" without saying against which pool a reconstruction is judged; chance is ``1/n`` for lenient,
``1/(n + D)`` for strict and about ``1/|corpus|`` for sentence.

``claimed`` (diagnostic): the share of originals that are the majority original of at least one group, an upper
bound on all three; ``claimed - lenient`` is lost in the solve, ``100 - claimed`` in the clustering.
"""

from __future__ import annotations

import numpy as np
import torch


def group_truth(clusters: list[torch.Tensor], member: torch.Tensor) -> torch.Tensor:
    """The majority original of each group."""
    return torch.stack([member[c].sum(0).argmax() for c in clusters]) if clusters else torch.zeros(0, dtype=torch.long)


def _nearest(rec: torch.Tensor, pool: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
    ra = torch.nn.functional.normalize(rec.abs().float(), dim=1)
    pa = torch.nn.functional.normalize(pool.abs().float(), dim=1)
    return torch.cat([(ra[s : s + chunk] @ pa.T).argmax(1) for s in range(0, len(ra), chunk)])


def _rate(ok_groups: torch.Tensor, truth: torch.Tensor, n: int) -> float:
    hit = torch.zeros(n, dtype=torch.bool)
    hit[truth[ok_groups]] = True
    return round(100.0 * float(hit.float().mean()), 2)


def success_rates(recovered: torch.Tensor, clusters: list[torch.Tensor], member: torch.Tensor, private_x: torch.Tensor, *,
                  distractors_x: torch.Tensor | None = None, sentence_index: np.ndarray | None = None,
                  candidate_texts: list[str] | None = None, private_texts: list[str] | None = None) -> dict:
    """``success_lenient``, ``success_strict`` (with ``distractors_x``), ``success_sentence`` (with the nearest
    candidate per group and the texts) and ``claimed``, in percent of the ``n`` originals (module docstring)."""
    n = len(private_x)
    out: dict = {}
    if not clusters:
        return {"success_lenient": 0.0}
    truth = group_truth(clusters, member)
    out["claimed"] = _rate(torch.ones(len(truth), dtype=torch.bool), truth, n)
    out["success_lenient"] = _rate(_nearest(recovered, private_x) == truth, truth, n)
    if distractors_x is not None:
        pool = torch.cat([private_x, distractors_x])
        out["success_strict"] = _rate(_nearest(recovered, pool) == truth, truth, n)
        out["n_distractors"] = len(distractors_x)
    if sentence_index is not None and candidate_texts is not None and private_texts is not None:
        ok = torch.tensor([candidate_texts[int(j)].strip() == private_texts[int(t)].strip()
                           for j, t in zip(sentence_index, truth.tolist())], dtype=torch.bool)
        out["success_sentence"] = _rate(ok, truth, n)
        out["sentence_corpus_size"] = len(candidate_texts)
    return out


def release_pair_accuracy(logits, member: torch.Tensor, edges: tuple[np.ndarray, np.ndarray] | None = None, *,
                          pairs: int = 100_000, seed: int = 0) -> dict:
    """The pair network on the real release, balanced: mean of the accuracy on pairs that share an original and
    on pairs that do not. All pairs: ``pairs`` of each kind sampled (seeded; not a secret). k-NN graph: every
    edge, plus the fraction of edges that share an original (``edge_precision``)."""
    mem = member.float()
    if edges is None:
        L = logits
        N = len(L)
        g = torch.Generator().manual_seed(seed)
        i = torch.randint(N, (8 * pairs,), generator=g)
        j = torch.randint(N, (8 * pairs,), generator=g)
        keep = i != j
        i, j = i[keep], j[keep]
        share = (mem[i] * mem[j]).sum(1) > 0
        pos, neg = share.nonzero()[:pairs, 0], (~share).nonzero()[:pairs, 0]
        tp = float((L[i[pos], j[pos]] > 0).float().mean()) if len(pos) else float("nan")
        tn = float((L[i[neg], j[neg]] <= 0).float().mean()) if len(neg) else float("nan")
        return {"balanced_accuracy": round(0.5 * (tp + tn), 4), "true_positive_rate": round(tp, 4), "true_negative_rate": round(tn, 4)}
    lo, hi = (torch.from_numpy(e) for e in edges)
    lg = torch.as_tensor(np.asarray(logits))
    step = max(1000, 20_000_000 // max(1, mem.shape[1]))  # bounded temporaries
    share = torch.cat([(mem[lo[s : s + step]] * mem[hi[s : s + step]]).sum(1) > 0 for s in range(0, len(lo), step)])
    tp = float((lg[share] > 0).float().mean()) if share.any() else float("nan")
    tn = float((lg[~share] <= 0).float().mean()) if (~share).any() else float("nan")
    return {"balanced_accuracy": round(0.5 * (tp + tn), 4), "true_positive_rate": round(tp, 4),
            "true_negative_rate": round(tn, 4), "edge_precision": round(float(share.float().mean()), 4), "edges": len(lo)}
