"""The m x k grid (TextHide paper, Figure 2), resumable point by point.

A point's file records the settings it was computed with (its run spec); a rerun reuses it only if they match
the current ones. A mismatch is refused before any work starts, naming the file and the settings that differ
(``--force`` recomputes); an unreadable point file is recomputed, with a one-line notice naming it. Each point's
record carries the majority-class score, the floor the sweep plot draws.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..errors import PrivnluError
from ..io import json_text, read_json, write_json_atomic
from ..mechanisms.texthide import check_k
from .engine import RunSpec, grid_label, prepare, train_run, with_scheme
from .selection import majority


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
    grid = [(m, k, with_scheme(base, m=m, k=k, inter=inter), out / f"{grid_label(m, k)}.json")
            for k in k_grid for m in m_grid]
    done = {path: rec for _, _, spec, path in grid if (rec := finished_point(path, spec, force=force)) is not None}
    first = grid[0][2]
    prep = prepare(first, progress=progress, refresh_cache=refresh_cache)
    points = []
    for m, k, spec, path in grid:
        rec = done.get(path) or _train_point(spec, prep, path)
        points.append({"m": rec["m"], "k": rec["k"], "score": rec["score"], "best_score": rec["best_score"], "file": path.name})
        if progress:
            print(f"  {grid_label(m, k):>12s}  {rec['metric']} score {rec['score']:.2f}", flush=True)
    summary = {"kind": "sweep", "task": prep.task.name, "metric": prep.task.metric, "inter": inter,
               "points": points, "seconds": time.time() - t0, "spec": base.to_json()}
    write_json_atomic(out / "summary.json", summary)
    return summary


def _train_point(spec: RunSpec, prep, path: Path) -> dict:
    """One point's run, with the majority-class score beside it (the plot's floor), written atomically."""
    rec = train_run(spec, prep, progress=False, group="sweep")
    rec["majority"] = majority(prep)
    from ..schemas import shareable

    write_json_atomic(path, shareable(rec, path.parent))  # no local path in a file one may share
    return rec


#: run-spec fields that do not change a point's result (where files are cached, which device computes them)
IGNORED_SETTINGS = ("cache_dir", "device", "encode_batch_size")


def point_settings(spec: RunSpec, folder: Path | None = None) -> dict:
    """The settings that define a point's result, flattened to ``{"train.epochs": 3, ...}``, as JSON stores them
    in a file in ``folder`` (paths written portably: :func:`privnlu.schemas.shareable`)."""
    from ..schemas import shareable

    return _flat({k: v for k, v in json.loads(json_text(shareable(spec.to_json(), folder))).items()
                  if k not in IGNORED_SETTINGS})


def finished_point(path: Path, spec: RunSpec, *, force: bool = False) -> dict | None:
    """The point's earlier record if it was computed with ``spec``'s settings; None if it must be (re)computed.

    Raises :class:`PrivnluError` (naming the file and the differing settings) if the file holds a point computed
    with other settings, unless ``force``.
    """
    if force or not path.exists():
        return None
    try:
        rec = read_json(path)
        old = _flat({k: v for k, v in rec["spec"].items() if k not in IGNORED_SETTINGS})
        rec["score"], rec["best_score"], rec["m"], rec["k"], rec["metric"]  # noqa: B018 - the fields the sweep reads
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        sys.stderr.write(f"privnlu: {path} is not a readable point result; recomputing it\n")
        return None
    new = point_settings(spec, path.parent)
    diff = [f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if diff:
        raise PrivnluError(f"{path} holds a point computed with other settings ({'; '.join(diff[:4])}"
                           f"{'; ...' if len(diff) > 4 else ''}): use another --out, or --force to recompute it")
    return rec


def _flat(d: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
