"""Every relative link of the README and the documentation points at a file that exists, and every #anchor at a
heading of that file (GitHub's anchor rule)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
GENERATED = re.compile(r"<!-- privnlu report .*?<!-- end of generated table -->", re.S)
FENCE = re.compile(r"```.*?```", re.S)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        out.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return out


def test_the_anchor_rule():
    assert re.sub(r"[^\w\- ]", "", "Table 1: utility on GLUE".lower()).replace(" ", "-") == "table-1-utility-on-glue"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    text = FENCE.sub("", GENERATED.sub("", page.read_text(encoding="utf-8")))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(target)
    assert not broken, broken
