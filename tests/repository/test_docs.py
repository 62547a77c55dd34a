"""Every table of the documentation pages is generated from committed records, and the pages match them."""

from __future__ import annotations

from pathlib import Path

import pytest

from privnlu.report.docs import blocks, regenerate

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p.read_text(encoding="utf-8"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_matches_its_records(page):
    text = page.read_text(encoding="utf-8")
    for paths in blocks(text):
        assert all((ROOT / p).exists() for p in paths), f"{page.name}: a block names missing records {paths}"
    assert regenerate(text, ROOT) == text, f"{page.name} differs from its records: run scripts/update_docs.py"


def test_the_paper_pages_have_generated_tables():
    for paper in ("huang2020", "xie2021", "xie2022", "qu2021"):
        page = ROOT / "docs" / "papers" / f"{paper}.md"
        assert page.is_file() and blocks(page.read_text(encoding="utf-8")), paper


def test_a_changed_record_shows(tmp_path):
    """The check can fail: a page whose table no longer matches its record is rewritten."""
    import json

    rec = {"kind": "dp", "privnlu": "0", "mechanism": "gaussian", "calibration": "correct", "target_epsilon": 8.0,
           "epsilon": 7.9, "delta": 1e-5, "noise": 1.0, "participations": 4, "dim": 8, "clip": 1.0,
           "valid_dp_guarantee": True, "label": "x"}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.json").write_text(json.dumps(rec))
    page = "<!-- privnlu report r --markdown -->\nstale\n<!-- end of generated table -->\n"
    assert regenerate(page, tmp_path) != page
