"""Assemble result records into one HTML page with PNG figures."""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from .. import __version__
from ..errors import PrivnluError
from ..io import write_text_atomic
from .registry import SECTIONS, Context

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%;margin:.5em 0}
.note{color:#555;font-size:.9em}"""


def load_results(paths: list[str | Path]) -> list[dict]:
    """Result records from JSON files, or from every ``*.json`` under given folders."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.json") if not f.name.startswith("."))
        elif p.is_file():
            files.append(p)
        else:
            raise PrivnluError(f"no such results file or folder: {p}")
    records = []
    for f in files:
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise PrivnluError(f"{f}: not a valid results JSON file") from None
        items = rec if isinstance(rec, list) else [rec]
        for r in items:
            if isinstance(r, dict) and "kind" in r:
                r.setdefault("_source", str(f))
                records.append(r)
    if not records:
        raise PrivnluError("no privnlu results found in " + ", ".join(map(str, paths)))
    return records


def markdown_report(paths: list[str | Path]) -> str:
    """The sections that have a Markdown form, as text (for docs/results.md)."""
    from . import load_sections

    load_sections()
    records = load_results(paths)
    parts = []
    for sec in sorted(SECTIONS.values(), key=lambda s: s.order):
        body = sec.markdown(records) if sec.markdown else None
        if body:
            parts.append(f"### {sec.title}\n\n{body}\n")
    return "\n".join(parts)


def build_report(paths: list[str | Path], out_dir: str | Path, *, title: str = "privnlu report") -> Path:
    """Render every registered section that has something to show; return the page's path."""
    from . import load_sections

    load_sections()
    records = load_results(paths)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(out)
    parts = []
    for sec in sorted(SECTIONS.values(), key=lambda s: s.order):
        body = sec.render(records, ctx)
        if body:
            parts.append(f'<section id="{sec.name}"><h2>{html.escape(sec.title)}</h2>{body}</section>')
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p class='note'>privnlu {__version__}, {len(records)} result records, generated {stamp}.</p>"
            + "".join(parts) + "</body></html>")
    return write_text_atomic(out / "index.html", page)
