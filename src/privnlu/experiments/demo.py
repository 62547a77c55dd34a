"""The demo: baseline, TextHide-intra (256, 4) and TextHide-inter (256, 4) on one task, then the report."""

from __future__ import annotations

import sys
from pathlib import Path

from ..report import build_report
from ..training import TrainConfig
from .pipeline import RunSpec, prepare, train_run, with_scheme

DEMO_POINTS = (("baseline", 0, 1, False), ("texthide-intra", 256, 4, False), ("texthide-inter", 256, 4, True))


def run_demo(out: Path, *, task: str = "tweets", model: str | None = None, epochs: int = 20, train_limit: int | None = None,
             public_size: int = 10000, data_dir: str | None = None, cache_dir: str | None = None, seed: int | None = None,
             progress: bool = True) -> Path:
    base = RunSpec(task=task, model=model, train_limit=train_limit, public_size=public_size, data_dir=data_dir,
                   cache_dir=cache_dir, train=TrainConfig(epochs=epochs, seed=seed))
    inter_spec = with_scheme(base, m=256, k=4, inter=True)
    prep = prepare(inter_spec, progress=progress)  # encodes train, dev and the public corpus once
    for name, m, k, inter in DEMO_POINTS:
        spec = with_scheme(base, m=m, k=k, inter=inter)
        rec = train_run(spec, prep, out=out / f"{spec.label}.json", progress=progress, group="demo")
        print(f"{name:15s} {rec['metric']} {rec['score']:.2f}  ({rec['seconds']:.0f} s)", file=sys.stderr, flush=True)
    return build_report([out], out / "report", title=f"privnlu demo: TextHide on {prep.task.name}")

