"""Documentation pages whose tables are generated from committed records.

A page holds blocks that name the records they render:

    <!-- privnlu report results/huang2020/table1-joint --markdown -->
    ...the Markdown that command prints...
    <!-- end of generated table -->

:func:`regenerate` replaces each block's body with what ``privnlu report PATHS --markdown`` prints now (paths
relative to ``root``), so a page never states a number its records do not hold; ``tests/repository/test_docs.py`` fails when a
committed page differs from its records, and ``scripts/update_docs.py`` rewrites the pages.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..io import write_text_atomic
from .builder import markdown_report

BLOCK = re.compile(r"(<!-- privnlu report (?P<args>[^>]*?) --markdown -->\n)(?P<body>.*?)(<!-- end of generated table -->)",
                   re.S)


def blocks(text: str) -> list[list[str]]:
    """The record paths of every generated block of a page, in order."""
    return [shlex.split(m.group("args")) for m in BLOCK.finditer(text)]


def regenerate(text: str, root: str | Path) -> str:
    """``text`` with every generated block rendered again from its records under ``root``."""
    root = Path(root)

    def render(m: re.Match) -> str:
        body = markdown_report([root / p for p in shlex.split(m.group("args"))]).strip() + "\n"
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(render, text)


def update(page: str | Path, root: str | Path) -> bool:
    """Rewrite ``page``'s generated blocks from their records; True if anything changed."""
    page = Path(page)
    old = page.read_text(encoding="utf-8")
    new = regenerate(old, root)
    if new != old:
        write_text_atomic(page, new)
    return new != old
