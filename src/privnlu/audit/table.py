"""The audit's points as one flat table: ``OUT/points.csv``, and what :func:`privnlu.audit` returns.

One row per point, one column per number a reader compares (no nested fields), so that a spreadsheet sorts it and
``pandas.DataFrame(rows)`` takes it as it is. Intervals are 95 %; rates, utilities and advantages are in %; a
threat a point does not have is empty (``None``). The full records stay in ``OUT/points/*.json``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..io import write_text_atomic
from .frontier import Point, at_chance, refuted, short_guarantee, useful

#: the columns, in order
COLUMNS = ("name", "scheme", "setting", "utility", "utility_lo", "utility_hi", "majority_class", "useful",
           "leakage_advantage", "leakage_lo", "leakage_hi", "worst_threat", "at_chance", "release_rate",
           "release_chance", "model_rate", "model_chance", "model_auc", "model_tpr_at_1pct_fpr",
           "model_tpr_at_0.1pct_fpr", "empirical_epsilon", "formal_epsilon", "refuted", "guarantee", "seconds")


def point_row(rec: dict) -> dict:
    """One audit point as a flat row (see :data:`COLUMNS`)."""
    p = Point.from_record(rec)
    threats = rec.get("threats") or {}
    release, model = threats.get("release") or {}, threats.get("model") or {}
    tpr = model.get("tpr_at_fpr") or {}
    chance = rec.get("chance_utility")
    u_lo, u_hi = p.utility_ci or (None, None)
    l_lo, l_hi = p.leak_ci or (None, None)
    return {"name": rec.get("name"), "scheme": rec.get("scheme"), "setting": rec.get("setting") or "",
            "utility": p.utility, "utility_lo": u_lo, "utility_hi": u_hi, "majority_class": chance,
            "useful": useful(p, chance), "leakage_advantage": p.leak, "leakage_lo": l_lo, "leakage_hi": l_hi,
            "worst_threat": p.threat, "at_chance": at_chance(p), "release_rate": release.get("rate"),
            "release_chance": release.get("chance", release.get("random_guess")), "model_rate": model.get("rate"),
            "model_chance": model.get("chance", model.get("random_guess")), "model_auc": model.get("auc"),
            "model_tpr_at_1pct_fpr": tpr.get("0.01"), "model_tpr_at_0.1pct_fpr": tpr.get("0.001"),
            "empirical_epsilon": p.empirical_epsilon, "formal_epsilon": p.formal_epsilon, "refuted": refuted(p),
            "guarantee": short_guarantee(rec["guarantee"]), "seconds": rec.get("seconds")}


def point_rows(records: list[dict]) -> list[dict]:
    """Every audit point among ``records`` as a flat row, in the given order."""
    return [point_row(r) for r in records if r.get("kind") == "audit"]


def write_points_csv(records: list[dict], path: str | Path) -> Path:
    """``points.csv``: :func:`point_rows` with a header line, written atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in point_rows(records):
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    path = Path(path)
    write_text_atomic(path, buf.getvalue())
    return path
