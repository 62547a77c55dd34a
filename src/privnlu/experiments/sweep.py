"""The m x k grid (TextHide paper, Figure 2), resumable point by point."""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import PrivnluError
from ..io import read_json, write_json_atomic
from ..mechanisms.texthide import check_k
from .pipeline import RunSpec, grid_label, prepare, train_run, with_scheme


def run_sweep(base: RunSpec, m_grid: list[float], k_grid: list[int], out: Path, *, inter: bool = False,
              force: bool = False, progress: bool = True, refresh_cache: bool = False) -> dict:
    """Train every (m, k) point once on shared cached features; skip points already done."""
    if not m_grid or not k_grid:
        raise PrivnluError("the grid is empty: give at least one m and one k")
    for k in k_grid:
        check_k(k, base.train.batch_size)
        if inter and k < 2:
            raise PrivnluError("TextHide-inter needs k >= 2 in every grid point")
    t0 = time.time()
    first = with_scheme(base, m=m_grid[0], k=k_grid[0], inter=inter)
    prep = prepare(first, progress=progress, refresh_cache=refresh_cache)
    points = []
    for k in k_grid:
        for m in m_grid:
            spec = with_scheme(base, m=m, k=k, inter=inter)
            path = out / f"{grid_label(m, k)}.json"
            if path.exists() and not force:
                rec = read_json(path)
            else:
                rec = train_run(spec, prep, out=path, progress=False, group="sweep")
            points.append({"m": rec["m"], "k": rec["k"], "score": rec["score"], "best_score": rec["best_score"], "file": path.name})
            if progress:
                print(f"  {grid_label(m, k):>12s}  {rec['metric']} score {rec['score']:.2f}", flush=True)
    summary = {"kind": "sweep", "task": prep.task.name, "metric": prep.task.metric, "inter": inter,
               "points": points, "seconds": time.time() - t0, "spec": base.to_json()}
    write_json_atomic(out / "summary.json", summary)
    return summary
