"""Recipes: the reconstruction attack on instance encoding (Xie & Hong, EMNLP 2021), Table 1 and Figure 1.

* Table 1: k in {1, 2, 4, 6} with m = 1;
* Figure 1: m in {1, 16, 64, 256, 1024, 4096} with k = 4 (abs() removes any sign mask, so the attack does not
  depend on m);
* Xie & Hong 2022 Figure 2 (the attack against DP TextHide) is :func:`privnlu.experiments.xie2022.figure2`, which
  reuses :func:`run_release`.

The setting and the attack are :mod:`privnlu.attacks.reconstruction_sweep`'s.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from ..attacks.audit import parse_condition
from ..attacks.reconstruction import CLUSTERINGS, ReconstructionConfig
from ..attacks.reconstruction_sweep import AUX_SIZE, EPOCHS, N_PRIVATE, reconstruction_record, reconstruction_sweep
from ..io import read_json, write_json_atomic
from ..mechanisms.dp import DPSettings
from ..training.engine import RunSpec, prepare

TASKS = ("cola", "sst2")
TABLE1_CONDITIONS = ("1:1", "1:2", "1:4", "1:6")
FIGURE1_CONDITIONS = ("1:4", "16:4", "64:4", "256:4", "1024:4", "4096:4")


def run_release(out: Path, name: str, task: str, conditions: tuple[str, ...], base: RunSpec | None, progress: bool,
                dp: DPSettings | None = None, methods: tuple[str, ...] | None = None) -> dict:
    """Attack one release per condition of ``task`` (DP TextHide with ``dp``) and write ``out/name.json``; a
    record already there for the same conditions is read back (a rerun of a recipe resumes)."""
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
    rec = reconstruction_record(prep, results, queries=N_PRIVATE, epochs=EPOCHS, aux_size=AUX_SIZE, config=config, seed=seed, t0=t0,
                                recipe=__name__)
    write_json_atomic(path, rec)
    return rec


def table1(out: Path, *, tasks: tuple[str, ...] = TASKS, base: RunSpec | None = None, progress: bool = True) -> list[dict]:
    """Table 1: k in {1, 2, 4, 6} at m = 1, 100 x 50 encodings, per task."""
    return [run_release(out, f"rec_{t}_k", t, TABLE1_CONDITIONS, base, progress) for t in tasks]


def figure1(out: Path, *, tasks: tuple[str, ...] = TASKS, base: RunSpec | None = None, progress: bool = True) -> list[dict]:
    """Figure 1: m in {1, ..., 4096} at k = 4."""
    return [run_release(out, f"rec_{t}_m", t, FIGURE1_CONDITIONS, base, progress) for t in tasks]
