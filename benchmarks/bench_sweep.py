"""Wall time of the SST-2 m x k sweep (7 x 4 points) from cached features, on this machine.

Runs the grid with a reduced number of epochs (default 1) and reports the time
per point relative to the baseline point (m=0, k=1) in the same process, so the
overhead of TextHide over plain training is visible. The full sweep's wall time
is recorded by `privnlu sweep` in its summary.json.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from common import save
from privnlu.data import glue_data_available
from privnlu.experiments.huang2020 import SWEEP_K, SWEEP_M
from privnlu.training.engine import RunSpec, grid_label, prepare, train_run, with_scheme
from privnlu.training import TrainConfig


def main(epochs: int = 1, train_limit: int | None = None) -> None:
    task = "sst2" if glue_data_available("sst2", "train") else "tweets"
    base = RunSpec(task=task, train_limit=train_limit, train=TrainConfig(epochs=epochs, seed=0))
    prep = prepare(with_scheme(base, m=256, k=4), progress=False)
    times = {}
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for k in SWEEP_K:
            for m in SWEEP_M:
                t0 = time.perf_counter()
                train_run(with_scheme(base, m=m, k=k), prep, out=Path(tmp) / "r.json", progress=False)
                times[grid_label(m, k)] = time.perf_counter() - t0
    total = time.perf_counter() - t_all
    ref = times[grid_label(0, 1)]
    save("sweep", {"task": task, "epochs_per_point": epochs, "n_train": len(prep.train), "total_seconds": total,
                   "baseline_point_seconds": ref, "ratio_to_baseline": {k: v / ref for k, v in times.items()}})


if __name__ == "__main__":
    # usage: bench_sweep.py [EPOCHS] [TRAIN_LIMIT]
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1, int(sys.argv[2]) if len(sys.argv) > 2 else None)
