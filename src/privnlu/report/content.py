"""What a report section returns: a sequence of immutable blocks, written out by :mod:`.render`.

A section computes its content once; the renderer writes the same blocks as the HTML page or as the Markdown of the
documentation. Text is plain text (escaped in HTML) unless it is :class:`~markupsafe.Markup` (fixed prose with
inline emphasis, written as Markdown emphasis in Markdown). Where the two outputs differ on purpose (a figure, a
longer table for the page, a shorter one for the docs), a section wraps the blocks of one output in :func:`html_only`
or :func:`markdown_only`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence, Union


def _tuple(items: Iterable[object]) -> tuple:
    return tuple(items)


@dataclass(frozen=True)
class Heading:
    """A heading inside a section (3 to 5; the page has h1, sections h2); bold text in Markdown."""

    level: int
    text: str


@dataclass(frozen=True)
class Para:
    """A paragraph (``cls``: its CSS class in the page, e.g. ``"note"``)."""

    text: str
    cls: str | None = None


@dataclass(frozen=True)
class Table:
    """A table of cells (floats with 2 decimals, None empty); ``cls``: its CSS class (``"text"``: left-aligned)."""

    columns: tuple
    rows: tuple
    cls: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", _tuple(self.columns))
        object.__setattr__(self, "rows", _tuple(_tuple(r) for r in self.rows))


@dataclass(frozen=True)
class Figure:
    """A matplotlib figure, drawn only for the page (``draw()`` returns it); Markdown has no figures."""

    draw: Callable[[], Any]
    name: str
    alt: str


@dataclass(frozen=True)
class Bullets:
    """An unordered list."""

    items: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", _tuple(self.items))


@dataclass(frozen=True)
class Only:
    """Blocks of one output format only (``"html"`` or ``"markdown"``)."""

    format: str
    blocks: tuple

    def __post_init__(self) -> None:
        if self.format not in ("html", "markdown"):
            raise ValueError(f"a report output is html or markdown, not {self.format!r}")
        object.__setattr__(self, "blocks", _tuple(self.blocks))


Block = Union[Heading, Para, Table, Figure, Bullets, Only]
#: a section's content: its blocks in order (None entries are left out)
Content = Sequence["Block | None"]


def note(text: str) -> Para:
    """A paragraph of the ``note`` class."""
    return Para(text, "note")


def html_only(*blocks: Block | None) -> Only:
    """Blocks for the HTML page only."""
    return Only("html", blocks)


def markdown_only(*blocks: Block | None) -> Only:
    """Blocks for the Markdown output only."""
    return Only("markdown", blocks)


def either(html: Block | Content | None, markdown: Block | Content | None) -> tuple[Only, Only]:
    """One block (or blocks) for the page, another for Markdown."""

    def seq(b):
        return () if b is None else tuple(b) if isinstance(b, (list, tuple)) else (b,)

    return Only("html", seq(html)), Only("markdown", seq(markdown))


def code_text(text: str, cls: str | None = None) -> tuple[Only, Only]:
    """A paragraph with Markdown code spans (`` `x` ``): kept in Markdown, shown without the backticks in the page."""
    return either(Para(text.replace("`", ""), cls), Para(text, cls))
