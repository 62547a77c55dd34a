"""The one renderer of report content (:mod:`.content`): the HTML page's fragments and the docs' Markdown."""

from __future__ import annotations

import html as _html
import re
from typing import Iterator

from . import markup
from .content import Block, Bullets, Content, Figure, Heading, Only, Para, Table
from .markup import Markup


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


def md_text(text: object) -> str:
    """Text as Markdown: markup's ``<b>``/``<strong>`` as bold, ``<em>`` as emphasis, other tags dropped; a plain
    string as it is."""
    if not isinstance(text, Markup):
        return str(text)
    text = re.sub(r"</?(b|strong)>", "**", str(text))
    text = re.sub(r"</?em>", "*", text)
    return _html.unescape(re.sub(r"<[^>]+>", "", text)).strip()


def blocks(content: Content | Block | str | None, output: str) -> Iterator[Block]:
    """The blocks of ``content`` for one output, nested sequences flattened, None left out, a plain string as text."""
    if content is None:
        return
    if isinstance(content, str):
        yield Para(content)
    elif isinstance(content, (list, tuple)):
        for c in content:
            yield from blocks(c, output)
    elif isinstance(content, Only):
        if content.format == output:
            yield from blocks(content.blocks, output)
    else:
        yield content


def to_html(content: Content | None, ctx) -> Markup:
    """The page's fragment of ``content``; figures are drawn and saved with ``ctx`` (:class:`.registry.Context`)."""
    parts: list[Markup] = []
    for b in blocks(content, "html"):
        if isinstance(b, Heading):
            parts.append(markup.heading(b.level, b.text))
        elif isinstance(b, Para):
            parts.append(markup.para(b.text, cls=b.cls))
        elif isinstance(b, Table):
            parts.append(table(list(b.columns), [list(r) for r in b.rows], b.cls))
        elif isinstance(b, Figure):
            parts.append(ctx.figure(b.draw(), b.name, b.alt))
        elif isinstance(b, Bullets):
            parts.append(markup.bullets(b.items))
        else:
            raise TypeError(f"not report content: {type(b).__name__}")
    return markup.join(*parts)


def to_markdown(content: Content | None) -> str:
    """``content`` as Markdown: blocks one after another, a blank line between; figures left out."""
    parts: list[str] = []
    for b in blocks(content, "markdown"):
        if isinstance(b, Heading):
            parts.append(f"**{md_text(b.text)}**")
        elif isinstance(b, Para):
            parts.append(md_text(b.text))
        elif isinstance(b, Table):
            parts.append(md_table(list(b.columns), list(b.rows)))
        elif isinstance(b, Bullets):
            parts.append("\n".join(f"- {md_text(i)}" for i in b.items))
        elif not isinstance(b, Figure):
            raise TypeError(f"not report content: {type(b).__name__}")
    return "\n\n".join(parts)
