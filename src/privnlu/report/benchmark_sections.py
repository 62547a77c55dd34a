"""Report section: committed benchmark records (``benchmarks/``; ``kind: benchmark``).

A benchmark reports ratios against a reference measured in the same run (absolute times differ from CPU to CPU and
from minute to minute on a shared machine); the machine it ran on, and its load, are shown beside them.
"""

from __future__ import annotations

from .content import Content, Para, Table, html_only
from .registry import section

HEAD = ["benchmark", "ratio", "value", "reference", "machine"]


def _recs(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: r["benchmark"])


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


@section("benchmarks", "Benchmarks: ratios against a reference measured in the same run", order=900,
         kinds=("benchmark",))
def benchmarks(records: list[dict]) -> Content:
    """Every ratio of every benchmark record, with the machine it ran on."""
    return [Table(HEAD, _rows(_recs(records))),
            html_only(Para("Each ratio divides by the reference measured in the same run; the seconds behind it are "
                           "in the record's details."))]
