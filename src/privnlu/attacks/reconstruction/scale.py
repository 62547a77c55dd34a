"""The reconstruction attack (Xie & Hong 2021) at the size of a real release, with its time and memory.

One TextHide release of ``n`` private examples (50 encodings each) drawn by ``sample_seed`` from a task's
training split, the defender's secrets from ``defender_seed``; the attacker scores all pairs (``graph = 0``, the
paper's) or only a k-nearest-neighbour graph of the ``|e|`` features (:mod:`.sparse`). Beside
the attack, a reference: scoring all ``N^2`` pairs with the same factorised network (or, with all pairs,
with materialised ``[a; b]`` inputs), timed on a slice of rows and extrapolated; the ratio is the speed-up.
``attack_cpu_seconds`` (user + system) is the time on a dedicated core for a one-thread run.
"""

from __future__ import annotations

import resource
import time

import torch

#: auxiliary and distractor examples of the attacked split (as in :mod:`.sweep`)
AUX, DISTRACTORS = 2000, 5000


def reference_all_pairs(feats: torch.Tensor, rows: int, materialise: bool) -> float:
    """Seconds to score all ``N^2`` pairs with a factorised network of the default shape, extrapolated from
    ``rows`` rows (``materialise``: build each concatenated pair input ``[a; b]`` instead)."""
    from .attack import PairScorer

    torch.manual_seed(0)
    net = PairScorer(feats.shape[1], 128, 32)
    n = len(feats)
    rows = min(rows, n)
    with torch.no_grad():
        t0 = time.perf_counter()
        if materialise:
            lin = torch.nn.Linear(2 * feats.shape[1], 128)
            for i in range(rows):
                pair = torch.cat([feats[i].expand(n, -1), feats], 1)
                _ = net.w(torch.relu(lin(pair))).squeeze(-1)
        else:
            ua, vb = net.u(feats[:rows]), net.v(feats)
            for s in range(0, rows, 32):
                _ = torch.relu(ua[s : s + 32, None, :] + vb[None]) @ net.w.weight[0]
        return (time.perf_counter() - t0) * n / rows


def scale_record(x: torch.Tensor, labels: torch.Tensor, texts: list[str], *, task: str, train_limit: int | None,
                 n: int, epochs: int = 50, m: str = "256", k: int = 4, graph: int = 0, methods: tuple[str, ...] = ("nmf",),
                 nmf_iters: int = 150, nmf_support: int = 64, nmf_seeds: str = "clique", nmf_repair_iters: int = 50,
                 nmf_repair_start: str = "seeds", nmf_repair_rounds: int = 1, sample_seed: int = 0,
                 defender_seed: int = 1, ref_rows: int = 50) -> dict:
    """Attack one release of ``x``'s rows and return the record (kind "attack", attack "reconstruct-scale")."""
    from ...mechanisms.texthide import parse_m
    from ...rng import SecretGenerator
    from . import kernels
    from ..conditions import Condition
    from .audit import reconstruction_audit
    from .attack import ReconstructionConfig, features
    from ..threat import Corpus

    g = torch.Generator().manual_seed(sample_seed)
    order = torch.randperm(len(x), generator=g)
    priv, aux, dis = order[:n], order[n : n + AUX], order[n + AUX : n + AUX + DISTRACTORS]
    cfg = ReconstructionConfig(seed=0, graph=graph, nmf_iters=nmf_iters, nmf_seeds=nmf_seeds, nmf_support=nmf_support,
                               nmf_repair_iters=nmf_repair_iters, nmf_repair_start=nmf_repair_start,
                               nmf_repair_rounds=nmf_repair_rounds)
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    rec = reconstruction_audit(x[priv], labels[priv], Condition("scale", parse_m(m), k),
                               SecretGenerator(defender_seed, warn=False), epochs=epochs,
                               auxiliary=Corpus([texts[i] for i in aux.tolist()], x[aux]), candidates=Corpus(texts, x),
                               private_texts=[texts[i] for i in priv.tolist()], config=cfg, methods=methods,
                               distractors_x=x[dis])
    total = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    ref = reference_all_pairs(features(torch.randn(n * epochs, x.shape[1], generator=g)), ref_rows, materialise=not graph)
    scoring = rec["methods"][methods[0]]["seconds"]["score_pairs"]
    return {"kind": "attack", "attack": "reconstruct-scale", "task": task, "train_limit": train_limit,
            "source": f"{task} train ({len(x)}) MiniLM features", "threads": torch.get_num_threads(),
            "sample_seed": sample_seed, "defender_seed": defender_seed, "n_private": n, "n_encodings": n * epochs,
            "m": m, "k": k, "graph_neighbours": graph or None, "nmf_iters": nmf_iters, "nmf_seeds": nmf_seeds,
            "nmf_support": nmf_support, "nmf_repair_iters": nmf_repair_iters, "nmf_repair_start": nmf_repair_start,
            "nmf_repair_rounds": nmf_repair_rounds, "nmf_products": "compiled" if kernels.AVAILABLE else "scipy",
            "repaired_groups": {mt: v.get("repaired_groups") for mt, v in rec["methods"].items()},
            "attack_total_seconds": round(total, 1), "attack_cpu_seconds": round(cpu, 1), "peak_rss_gib": round(peak_gib, 2),
            "stages": {mt: v["seconds"] for mt, v in rec["methods"].items()},
            "success": {mt: {s: v[s] for s in v if s.startswith("success")} for mt, v in rec["methods"].items()},
            "purity": {mt: v["purity"] for mt, v in rec["methods"].items()},
            "claimed": {mt: v.get("claimed") for mt, v in rec["methods"].items()},
            "pair_accuracy": rec["pair_accuracy"], "pair_scoring_seconds": scoring,
            ("reference_all_pairs_factorised_seconds_extrapolated" if graph else
             "reference_materialised_pairs_seconds_extrapolated"): round(ref, 1),
            "speedup_vs_reference": round(ref / max(scoring, 1e-9), 1)}
