"""The repository describes the product, not the history of its making: no work-item or work-period numbers in
the README, docs, source, tests or tools; maintained tools only in scripts/; results filed by paper."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"\b(session|issue|lane|sprint|milestone)s? ?#?\d", re.I)
TEXT = (".md", ".py", ".sh", ".toml", ".txt", ".cfg")


def _files():
    for top in ("README.md", "docs", "src", "tests", "scripts", "benchmarks", "Makefile", "results"):
        path = ROOT / top
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for p in paths:
            if (p.suffix in TEXT or p.name == "Makefile") and "egg-info" not in str(p):
                yield p


def test_no_work_history_words():
    hits = []
    for p in _files():
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if HISTORY.search(line) and p != Path(__file__):
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "\n".join(hits[:20])


def test_the_check_can_fail():
    assert HISTORY.search("as measured in session 12") and HISTORY.search("Issue #10") and not HISTORY.search("issue")


def test_scripts_are_maintained_tools_only():
    names = sorted(p.name for p in (ROOT / "scripts").iterdir() if p.is_file())
    assert not [n for n in names if re.search(r"(issue|session|s\d+_|i\d+_|queue|lane)", n, re.I)], names


def test_results_are_filed_by_paper():
    papers = {p.name for p in (ROOT / "results").iterdir() if p.is_dir()}
    assert papers <= {"huang2020", "xie2021", "xie2022", "qu2021"}, papers
