"""The report's section registry.

A section is a function ``render(results, ctx) -> Markup | None`` registered with
:func:`section`. It receives every result record loaded for the report (dicts
from the results JSONs, each with a ``kind``) and returns an HTML fragment built
from the templates of :mod:`.markup`, or None when it has nothing to show; a
plain string is shown as text, never as markup. Figures are saved with
:meth:`Context.figure`. Later features add a module to
:data:`privnlu.report.SECTION_MODULES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..io import safe_filename
from ..params import plural  # noqa: F401 (re-exported for the sections)
from . import markup
from .markup import Markup

Render = Callable[[list[dict], "Context"], "Markup | None"]


Markdown = Callable[[list[dict]], "str | None"]


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    order: int
    render: Render
    markdown: Markdown | None = None


SECTIONS: dict[str, Section] = {}


def section(name: str, title: str, order: int = 100, *, markdown: Markdown | None = None) -> Callable[[Render], Render]:
    """Decorator: register ``render`` as a report section (``markdown``: optional text-table renderer)."""

    def deco(fn: Render) -> Render:
        SECTIONS[name] = Section(name, title, order, fn, markdown)
        return fn

    return deco


@dataclass
class Context:
    """Where a section writes its figures."""

    out_dir: Path
    figures: list[str] = field(default_factory=list)

    def figure(self, fig, name: str, alt: str) -> Markup:
        """Save a matplotlib figure as PNG beside the page; return its image tag.

        ``name`` may hold a task name or a label from the records: the file name is :func:`privnlu.io.safe_filename`
        of it, so it stays inside the report folder and needs no quoting in the page.
        """
        import matplotlib.pyplot as plt

        fname = safe_filename(name) + ".png"
        legends_outside(fig)
        fig.savefig(self.out_dir / fname, dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(fname)
        return markup.figure(fname, alt)


def legends_outside(fig) -> None:
    """Move every axes legend off the data: to the right of a lone axes, below each axes of a one-row grid.

    The page saves with ``bbox_inches="tight"``, so the figure grows to hold the moved legends.
    """
    axes = [ax for ax in fig.axes if ax.get_legend() is not None]
    rows = {ax.get_subplotspec().rowspan.start for ax in fig.axes if ax.get_subplotspec() is not None}
    for ax in axes:
        old = ax.get_legend()
        size = old.get_texts()[0].get_fontsize() if old.get_texts() else None
        handles, labels = ax.get_legend_handles_labels()
        if not handles:
            continue
        if len(fig.axes) == 1:
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=size, frameon=False)
        elif len(rows) <= 1:
            ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=size, frameon=False,
                      ncol=min(2, len(labels)))


def fmt(v: object) -> str:
    """Cell text: floats with 2 decimals, None as empty."""
    if isinstance(v, float):
        return f"{v:.2f}"
    return "" if v is None else str(v)


def table(headers: list[str], rows: list[list[object]], cls: str | None = None) -> Markup:
    """An HTML table of text cells (see :func:`fmt`); ``cls``: its CSS class (``"text"``: left-aligned)."""
    return markup.table(headers, [[fmt(v) for v in r] for r in rows], cls)


_PIPE = re.compile(r"(\\*)\|")


def md_cell(v: object) -> str:
    """A Markdown table cell's text: :func:`fmt`, line breaks as spaces, every ``|`` escaped as ``\\|`` (with the
    backslashes right before it doubled, so data never closes the cell)."""
    text = fmt(v)
    if "\n" in text or "\r" in text:
        text = " ".join(text.splitlines())
    return _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", text)


def md_table(headers: list[str], rows: list[list[object]]) -> str:
    """The same table as GitHub Markdown: every row has the header's cells; ``|`` and line breaks are escaped."""
    width = len(headers)
    lines = ["| " + " | ".join(md_cell(h) for h in headers) + " |", "|" + "---|" * width]
    for r in rows:
        if len(r) != width:
            raise ValueError(f"a Markdown table row has {len(r)} cells, its header {width}")
        lines.append("| " + " | ".join(md_cell(v) for v in r) + " |")
    return "\n".join(lines)


class TextOnly(Context):
    """A context for Markdown output: figures are closed, not saved (the page's figures have no Markdown form)."""

    def figure(self, fig, name: str, alt: str) -> Markup:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return Markup("")


def html_markdown(fragment: str) -> str:
    """A section's HTML as Markdown: paragraphs and headings as text, tables as Markdown tables, images dropped."""
    from html.parser import HTMLParser

    class Parser(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.blocks: list[str] = []
            self.text: list[str] = []
            self.rows: list[list[str]] | None = None
            self.cell: list[str] | None = None

        def handle_starttag(self, tag, attrs) -> None:
            if tag == "table":
                self._flush()
                self.rows = []
            elif tag == "tr" and self.rows is not None:
                self.rows.append([])
            elif tag in ("td", "th"):
                self.cell = []
            elif tag == "br":
                self.text.append(" ")

        def handle_endtag(self, tag) -> None:
            if tag in ("td", "th") and self.cell is not None and self.rows:
                self.rows[-1].append(" ".join("".join(self.cell).split()))
                self.cell = None
            elif tag == "table" and self.rows is not None:
                rows = [r for r in self.rows if r]
                if rows:
                    self.blocks.append(md_table(rows[0], rows[1:]))
                self.rows = None
            elif tag in ("p", "h3", "h4", "li", "div"):
                self._flush(bold=tag in ("h3", "h4"))

        def handle_data(self, data: str) -> None:
            (self.cell if self.cell is not None else self.text).append(data)

        def _flush(self, bold: bool = False) -> None:
            text = " ".join("".join(self.text).split())
            if text:
                self.blocks.append(f"**{text}**" if bold else text)
            self.text = []

    p = Parser()
    p.feed(fragment)
    p.close()
    p._flush()
    return "\n\n".join(p.blocks)
