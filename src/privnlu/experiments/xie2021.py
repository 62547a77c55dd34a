"""Recipe: the reconstruction attack on instance encoding (Xie & Hong, EMNLP 2021), and its run against
DP instance encoding (Xie & Hong 2022, Figure 2).

Setting (both papers): 100 private training examples of a GLUE task, each encoded
50 times (one TextHide pass per epoch, all 100 in one batch), 5,000 encodings with
mixed labels; the attacker has 2,000 same-distribution examples (disjoint from the
private ones) and maps recovered vectors back to sentences over the whole training
split. Success is defined in :func:`privnlu.attacks.audit.score_reconstruction`.

* Table 1: k in {1, 2, 4, 6} with m = 1;
* Figure 1: m in {1, 16, 64, 256, 1024, 4096} with k = 4 (abs() removes any sign
  mask, so the attack does not depend on m);
* Xie & Hong 2022 Figure 2 (the attack against DP TextHide) is
  :func:`privnlu.experiments.xie2022.figure2`, which reuses :func:`run_release`.

``privnlu attack reconstruct`` and ``privnlu reproduce xie2021-*`` both run
:func:`reconstruction_sweep`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import torch

from ..errors import require
from ..io import read_json, write_json_atomic
from ..mechanisms.dp import DPSettings
from ..models.encoder import public_model_name
from ..rng import SecretGenerator
from .pipeline import Prepared, RunSpec, prepare

TASKS = ("cola", "sst2")
N_PRIVATE = 100
EPOCHS = 50
AUX_SIZE = 2000
DISTRACTORS = 5000  # strict success: same-split examples that are neither private nor auxiliary
TABLE1_CONDITIONS = ("1:1", "1:2", "1:4", "1:6")
FIGURE1_CONDITIONS = ("1:4", "16:4", "64:4", "256:4", "1024:4", "4096:4")



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
                         dp: DPSettings | None = None, seed: int | None = None, distractors: int = DISTRACTORS,
                         log: Callable[[str], None] = lambda s: None) -> dict:
    """Attack each condition (the defender's secrets from ``SecretGenerator(seed)``: experiments only)."""
    from ..attacks.audit import reconstruction_audit
    from ..attacks.reconstruction import CLUSTERINGS
    from ..attacks.threat import Corpus

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
            cal = dp.calibrate(dim=prep.train_x.shape[1], k=cond.k, epochs=epochs)
            mech = cal.mechanism
            if not cal.valid:
                log(f"WARNING: --dp-calibration paper is NOT a valid DP guarantee; this release is only ({cal.epsilon:.4g}, {cal.delta:g})-DP")
        r = reconstruction_audit(prep.train_x[priv], labels[priv], cond, SecretGenerator(seed, warn=False), epochs=epochs,
                                 auxiliary=auxiliary, candidates=candidates, private_texts=texts, config=config,
                                 methods=methods or CLUSTERINGS, mechanism=mech, num_labels=len(prep.task.label_names),
                                 distractors_x=prep.train_x[dis] if len(dis) else None)
        if cal is not None:
            r["dp_calibration"] = cal.to_json()
        results[cond.name] = r
        log(f"  {cond.name:>10}: " + ", ".join(f"{m} {v['success']:.0f}%/{v.get('success_strict', float('nan')):.0f}%/"
                                               f"{v.get('success_sentence', float('nan')):.0f}% (cos {v['cosine_to_truth']})"
                                               for m, v in r["methods"].items())
            + f"; attack {r['attack_seconds']:.0f} s")
    return results


def reconstruction_record(prep: Prepared, results: dict, *, queries: int, epochs: int, aux_size: int, config,
                          seed: int | None, t0: float) -> dict:
    """The results JSON (kind "attack", attack "reconstruct")."""
    from .. import __version__
    from ..attacks.threat import RECONSTRUCTION_THREAT

    return {"kind": "attack", "attack": "reconstruct", "privnlu": __version__, "task": prep.task.name,
            "threat_model": RECONSTRUCTION_THREAT.to_json(), "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling,
            "n_queries": queries, "conditions": results, "experiment_seed": seed, "seconds": round(time.time() - t0, 2),
            "corpus": f"{prep.task.name}/train", "corpus_size": len(prep.train), "epochs": epochs, "aux_size": aux_size,
            "config": None if config is None else dict(config.__dict__), "recipe": __name__}


def run_release(out: Path, name: str, task: str, conditions: tuple[str, ...], base: RunSpec | None, progress: bool,
                dp: DPSettings | None = None, methods: tuple[str, ...] | None = None) -> dict:
    """Attack one release per condition of ``task`` (DP TextHide with ``dp``) and write ``out/name.json``; a
    record already there for the same conditions is read back (a rerun of a recipe resumes)."""
    from ..attacks.audit import parse_condition
    from ..attacks.reconstruction import CLUSTERINGS, ReconstructionConfig

    path = out / f"{name}.json"
    if path.exists():
        rec = read_json(path)
        done = rec.get("conditions", {})
        if set(done) == {parse_condition(c).name for c in conditions} and all(
                set(r.get("methods", {})) == set(methods or CLUSTERINGS) for r in done.values()):
            return rec
    seed = base.train.seed if base is not None else 0
    spec = replace(base, task=task, scheme="none") if base is not None else RunSpec(task=task)
    t0 = time.time()
    prep = prepare(spec, progress=progress)
    config = ReconstructionConfig(seed=seed if seed is not None else 0)
    results = reconstruction_sweep(prep, tuple(parse_condition(c) for c in conditions), config=config, dp=dp, seed=seed,
                                   methods=methods, log=print if progress else (lambda s: None))
    rec = reconstruction_record(prep, results, queries=N_PRIVATE, epochs=EPOCHS, aux_size=AUX_SIZE, config=config, seed=seed, t0=t0)
    write_json_atomic(path, rec)
    return rec


def table1(out: Path, *, tasks: tuple[str, ...] = TASKS, base: RunSpec | None = None, progress: bool = True) -> list[dict]:
    """Table 1: k in {1, 2, 4, 6} at m = 1, 100 x 50 encodings, per task."""
    return [run_release(out, f"rec_{t}_k", t, TABLE1_CONDITIONS, base, progress) for t in tasks]


def figure1(out: Path, *, tasks: tuple[str, ...] = TASKS, base: RunSpec | None = None, progress: bool = True) -> list[dict]:
    """Figure 1: m in {1, ..., 4096} at k = 4."""
    return [run_release(out, f"rec_{t}_m", t, FIGURE1_CONDITIONS, base, progress) for t in tasks]
