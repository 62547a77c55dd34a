"""Attack releases of a prepared task with the reconstruction attack (Xie & Hong 2021): pick the private,
auxiliary and distractor examples, release the private ones under each condition, attack, score.

Setting (both Xie & Hong papers): 100 private training examples of a GLUE task, each encoded 50 times (one
TextHide pass per epoch, all 100 in one batch), 5,000 encodings with mixed labels; the attacker has 2,000
same-distribution examples (disjoint from the private ones) and maps recovered vectors back to sentences over the
whole training split. Success is defined in :func:`privnlu.attacks.reconstruction.audit.score_reconstruction`.
``privnlu attack reconstruct``, the audit and the xie2021 / xie2022 recipes all run :func:`reconstruction_sweep`.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from ...errors import require
from ...mechanisms.dp import PER_BATCH_NOT_DP, DPSettings
from ...models.encoder import public_model_name
from ...rng import SecretGenerator
from ...training.engine import Prepared
from ...version import __version__
from .audit import reconstruction_audit
from .attack import CLUSTERINGS
from ..threat import RECONSTRUCTION_THREAT, Corpus

N_PRIVATE = 100
EPOCHS = 50
AUX_SIZE = 2000
DISTRACTORS = 5000  # strict success: same-split examples that are neither private nor auxiliary

def select_examples(prep: Prepared, queries: int, aux_size: int, seed: int | None,
                    distractors: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(private, auxiliary, distractor) row indices of the training split, disjoint; the choice is public (not a
    secret). Distractors are as many of the remaining rows as there are, up to ``distractors``."""
    n_total = len(prep.train)
    require(queries + aux_size <= n_total,
            f"--queries {queries} private plus --aux-size {aux_size} auxiliary examples exceed the {n_total} available")
    order = torch.randperm(n_total, generator=torch.Generator().manual_seed(seed if seed is not None else 0))
    rest = order[queries + aux_size :]
    return order[:queries], order[queries : queries + aux_size], rest[:distractors]


def reconstruction_sweep(prep: Prepared, conditions, *, queries: int = N_PRIVATE, epochs: int = EPOCHS,
                         aux_size: int = AUX_SIZE, methods: tuple[str, ...] | None = None, config=None,
                         dp: DPSettings | None = None, noise: str = "per-encoding", seed: int | None = None,
                         distractors: int = DISTRACTORS, log: Callable[[str], None] = lambda s: None,
                         progress: bool = True) -> dict:
    """Attack each condition (the defender's secrets from ``SecretGenerator(seed)``: experiments only); with ``dp``,
    a DP instance encoding release whose noise is drawn per encoding or, ``noise="per-batch"``, once per batch.
    ``progress``: the attack's own progress bars."""
    assert prep.train_x is not None
    require(not prep.task.is_regression, f"attack audits need a classification task; {prep.task.name} is a regression task")
    require(epochs >= 2, "too few encodings to cluster: use --encodings-per-example 2 or more")
    priv, aux, dis = select_examples(prep, queries, aux_size, seed, distractors)
    labels = torch.tensor(prep.train.labels)
    auxiliary = Corpus([prep.train.texts_a[i] for i in aux.tolist()], prep.train_x[aux], labels[aux])
    candidates = Corpus(prep.train.texts_a, prep.train_x)
    texts = [prep.train.texts_a[i] for i in priv.tolist()]
    results = {}
    for cond in conditions:
        mech, cal = None, None
        if dp is not None:
            cal = dp.calibrate(dim=prep.train_x.shape[1], k=cond.k, epochs=epochs, noise=noise)
            mech = cal.mechanism
            if cal.noise_reading == "per-batch":
                log(f"WARNING: this release is {PER_BATCH_NOT_DP}")
            elif not cal.valid:
                log(f"WARNING: --dp-calibration paper is NOT a valid DP guarantee; this release is only ({cal.epsilon:.4g}, {cal.delta:g})-DP")
        r = reconstruction_audit(prep.train_x[priv], labels[priv], cond, SecretGenerator(seed, warn=False), epochs=epochs,
                                 auxiliary=auxiliary, candidates=candidates, private_texts=texts, config=config,
                                 methods=methods or CLUSTERINGS, mechanism=mech, num_labels=len(prep.task.label_names),
                                 distractors_x=prep.train_x[dis] if len(dis) else None, noise=noise,
                                 progress=progress)
        if cal is not None:
            r["dp_calibration"] = cal.to_json()
        results[cond.name] = r
        log(f"  {cond.name:>10}: " + ", ".join(f"{m} {v['success']:.0f}%/{v.get('success_strict', float('nan')):.0f}%/"
                                               f"{v.get('success_sentence', float('nan')):.0f}% (cos {v['cosine_to_truth']})"
                                               for m, v in r["methods"].items())
            + f"; attack {r['attack_seconds']:.0f} s")
    return results


def reconstruction_record(prep: Prepared, results: dict, *, queries: int, epochs: int, aux_size: int, config,
                          seed: int | None, t0: float, recipe: str | None = None) -> dict:
    """The results JSON (kind "attack", attack "reconstruct"); ``recipe``: the recipe that made it, if any."""

    return {"kind": "attack", "attack": "reconstruct", "privnlu": __version__, "task": prep.task.name,
            "threat_model": RECONSTRUCTION_THREAT.to_json(), "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling,
            "n_queries": queries, "conditions": results, "experiment_seed": seed, "seconds": round(time.time() - t0, 2),
            "corpus": f"{prep.task.name}/train", "corpus_size": len(prep.train), "epochs": epochs, "aux_size": aux_size,
            "config": None if config is None else dict(config.__dict__), "recipe": recipe}
