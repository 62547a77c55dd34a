"""Assemble result records into one HTML page with PNG figures (Jinja2 templates, autoescaped: :mod:`.markup`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from ..version import __version__
from ..errors import PrivnluError
from ..io import record_files, umask_mode, write_text_atomic
from ..schemas import check_record
from . import markup
from .dp_claims import check_dp_claims
from .markup import Markup
from .registry import SECTIONS, Context, plural
from .render import to_html, to_markdown

#: one module per feature area; each registers its sections when imported (see :mod:`.registry`)
SECTION_MODULES = ("audit_sections", "texthide_sections", "attack_sections", "dp_sections", "dp_attack_sections",
                   "dchi_sections", "dchi_training_sections", "federated_sections", "dp_sgd_sections",
                   "inference_sections", "benchmark_sections")


def load_sections() -> None:
    """Import every section module (each registers its sections)."""
    import importlib

    for name in SECTION_MODULES:
        importlib.import_module(f"{__package__}.{name}")

KIND_WORDS = {"train": ("training run", None), "audit": ("audit point", None), "attack": ("attack result", None),
              "dchi": ("d_chi analysis", "d_chi analyses"), "federated": ("federated run", None)}


def run_summary(records: list[dict]) -> str:
    """One sentence on what was run: record counts by kind and the tasks they cover."""
    kinds: dict[str, int] = {}
    for r in records:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    parts = []
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        word, many = KIND_WORDS.get(kind, (f"{kind} result", None))
        parts.append(plural(n, word, many))
    tasks = sorted({str(r["task"]) for r in records if r.get("task")})
    text = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    if tasks:
        text += f" on {plural(len(tasks), 'task')} ({', '.join(tasks)})"
    return text + "."


def load_results(paths: list[str | Path]) -> list[dict]:
    """Result records from JSON files, or from every ``*.json`` under given folders outside hidden files and
    folders (a recipe's checkpoints and trained models: ``.pretrain/``, ``.models/``)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += record_files(p, recursive=True)
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
                check_record(r, file=f)  # typed fields before any section renders (privnlu.schemas.records)
                check_dp_claims(r, f)  # a DP-SGD guarantee is recomputed, never taken on trust
                r.setdefault("_source", str(f))
                records.append(r)
    if not records:
        raise PrivnluError("no privnlu results found in " + ", ".join(map(str, paths)))
    return records


#: what a section raises when a record lacks a field or holds a value of the wrong type
RECORD_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError)


def _warn(msg: str) -> None:
    import sys

    sys.stderr.write(f"privnlu report: warning: {msg}\n")


def _render_all(records: list[dict], render) -> tuple[list, list[dict]]:
    """``render(section, records)`` for every section; a record that makes a section fail (a missing field, a
    wrong type) is left out of the whole report with a one-line warning naming its file, and the sections are
    rendered again without it. Returns the non-empty outputs in section order, and the records used."""
    load_sections()
    records = list(records)
    while True:
        try:
            return [(sec, body) for sec in sorted(SECTIONS.values(), key=lambda s: (s.order, s.name))
                    if (body := render(sec, records))], records
        except RECORD_ERRORS as exc:
            bad = [r for r in records if _fails(render, r)]
            if not bad:  # no single record explains it: a bug, not a bad file
                raise PrivnluError(f"the report could not be built ({type(exc).__name__}: {exc})") from None
            for r in bad:
                _warn(f"skipping {r.get('_source', 'a record')}: not a complete {r.get('kind')!r} result "
                      f"({type(exc).__name__}: {exc})")
            records = [r for r in records if not any(r is b for b in bad)]
            if not records:
                raise PrivnluError("no complete privnlu results to report") from None


def _fails(render, rec: dict) -> bool:
    load_sections()
    try:
        for sec in SECTIONS.values():
            render(sec, [rec])
    except RECORD_ERRORS:
        return True
    return False


def _markdown(sec, records: list[dict]) -> str | None:
    content = sec.content(records)
    return (to_markdown(content) or None) if content else None


def _html(sec, records: list[dict], ctx: Context) -> Markup | None:
    content = sec.content(records)
    return (to_html(content, ctx) or None) if content else None


def section_markdown(name: str, records: list[dict]) -> str | None:
    """One registered section's Markdown for ``records`` (None: it has nothing to show)."""
    load_sections()
    return _markdown(SECTIONS[name], records)


def section_html(name: str, records: list[dict], ctx: Context) -> Markup | None:
    """One registered section's HTML fragment for ``records``, its figures saved with ``ctx``."""
    load_sections()
    return _html(SECTIONS[name], records, ctx)


def markdown_report(paths: list[str | Path]) -> str:
    """Every section as Markdown text (for the documentation pages, :mod:`.docs`): the same content as the page,
    figures left out."""
    bodies, _ = _render_all(load_results(paths), _markdown)
    return "\n".join(f"### {sec.title}\n\n{body}\n" for sec, body in bodies)


def build_report(paths: list[str | Path], out_dir: str | Path, *, title: str = "privnlu report") -> Path:
    """Render every registered section that has something to show; return the page's path.

    Everything is rendered into a temporary folder beside ``out_dir`` and moved into place only when the whole
    page succeeded, so a failure never leaves a partial report.
    """
    import os
    import shutil
    import tempfile

    records = load_results(paths)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        def render(sec, recs):
            with tempfile.TemporaryDirectory(dir=stage) as scratch:  # figures of a failed attempt are dropped
                ctx = Context(Path(scratch))
                body = _html(sec, recs, ctx)
                for f in ctx.figures:
                    os.replace(Path(scratch) / f, stage / f)
                return body

        bodies, used = _render_all(records, render)
        # a section's body is made by the renderer's templates; text from records in it is escaped
        page = markup.page(title=title, summary=run_summary(used), version=__version__,
                           records=plural(len(used), "result record"),
                           stamp=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           sections=[{"name": sec.name, "title": sec.title, "body": body} for sec, body in bodies])
        # a page for readers: the umask's mode (not mkstemp's 0600, nor a fixed 0644 that a private umask forbids)
        write_text_atomic(stage / "index.html", page, mode=umask_mode())
        out.mkdir(parents=True, exist_ok=True)
        for f in sorted(stage.iterdir(), key=lambda f: f.name == "index.html"):  # the page last
            if f.is_file():
                os.replace(f, out / f.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"
