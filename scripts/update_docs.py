"""Regenerate the tables of the documentation pages from the committed records (``privnlu.report.docs``).

    .venv/bin/python scripts/update_docs.py            # every page under docs/ with generated blocks

A page's generated block names the records it renders; ``tests/repository/test_docs.py`` fails while a page differs from them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from privnlu.report.docs import update  # noqa: E402

if __name__ == "__main__":
    pages = [Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "docs").rglob("*.md"))
    changed = [p for p in pages if update(p, ROOT)]
    print("\n".join(f"updated {p.relative_to(ROOT)}" for p in changed) or "every page matches its records")
