"""The demo: a compact ``privnlu audit`` of every scheme on the packaged tweets task, then the report.

The grid is the audit's (no privacy; TextHide intra and inter at (256, 4); DP instance encoding at three
epsilons; d_chi text-to-text, token-rep and sequence-rep at two calibrated eta, for token-inversion accuracies 0.1
and 0.7), on a slice of the data sized to finish well within 10 minutes on 2 CPU cores: 1,000 training and 300 dev
tweets, 100 private sentences among 2,000 distractors (the full audit uses 5,000: encoding 3,000 more sentences
costs about a minute on 2 cores), and 20 encodings per private sentence for the reconstruction attack (Xie & Hong
2021 use 50). Every text-to-text or token-rep point re-encodes the privatized 1,300 tweets, the largest cost, so
the demo keeps two eta per d_chi mechanism (``privnlu audit`` defaults to three).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..audit import AuditSettings, run_audit
from ..report import build_report

DEMO = AuditSettings(task="tweets", train_limit=1000, dev_limit=300, epochs=20, n_private=100, distractors=2000,
                     attack_epochs=20, aux_size=300, public_size=1200, dp_epsilons=(1.0, 8.0, 64.0),
                     dchi_targets=(0.1, 0.7), calibration_tokens=2000)


def run_demo(out: Path, *, task: str = "tweets", model: str | None = None, epochs: int = 20, train_limit: int | None = None,
             data_dir: str | None = None, cache_dir: str | None = None, seed: int | None = None, progress: bool = True,
             log=lambda s: None) -> Path:
    settings = replace(DEMO, task=task, model=model, epochs=epochs, train_limit=train_limit or DEMO.train_limit,
                       data_dir=data_dir, cache_dir=cache_dir, seed=seed)
    run_audit(settings, out, progress=progress, log=log)
    return build_report([out / "points"], out / "report", title=f"privnlu demo: which privatization for {task}, at what cost")
