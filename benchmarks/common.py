"""Shared helpers for the benchmarks: best-of-N wall time and a JSON record under runs/bench/."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Callable

import torch


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Minimum wall time of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def save(name: str, record: dict) -> None:
    record = {"benchmark": name, "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
              "torch": torch.__version__, **record}
    out = Path("runs/bench")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))
