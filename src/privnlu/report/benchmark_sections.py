"""Report section: committed benchmark records (``benchmarks/``; ``kind: benchmark``).

A benchmark reports ratios against a reference measured in the same run (absolute times differ from CPU to CPU and
from minute to minute on a shared machine); the machine it ran on, and its load, are shown beside them.
"""

from __future__ import annotations

from .markup import Markup, para
from .registry import Context, md_table, section, table

HEAD = ["benchmark", "ratio", "value", "reference", "machine"]


def _recs(records: list[dict]) -> list[dict]:
    return sorted((r for r in records if r.get("kind") == "benchmark"), key=lambda r: r["benchmark"])


def _machine(m: dict) -> str:
    isa = ", ".join(name for name in ("avx2", "avx512f", "avx512_bf16", "amx") if m.get(f"has_{name}")) or "none listed"
    load = m.get("load_average_1min")
    return (f"{m['cpu_model']}, {m['cpus']} CPUs ({isa}), torch {m['torch']} on {m['torch_threads']} thread(s)"
            + (f", 1-minute load {load:g} at the end" if load is not None else ""))


def _rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for r in recs:
        for i, (name, value) in enumerate(r["ratios"].items()):
            rows.append([r["benchmark"] if i == 0 else "", name.replace("_", " "), value,
                         r["reference"] if i == 0 else "", _machine(r["machine"]) if i == 0 else ""])
    return rows


def benchmarks_md(records: list[dict]) -> str | None:
    recs = _recs(records)
    return md_table(HEAD, _rows(recs)) if recs else None


@section("benchmarks", "Benchmarks: ratios against a reference measured in the same run", order=900,
         markdown=benchmarks_md)
def benchmarks(records: list[dict], ctx: Context) -> Markup | None:
    """Every ratio of every benchmark record, with the machine it ran on."""
    recs = _recs(records)
    if not recs:
        return None
    return table(HEAD, _rows(recs)) + para("Each ratio divides by the reference measured in the same run; "
                                           "the seconds behind it are in the record's details.")
