"""The report's HTML, built with Jinja2 templates (``templates/``) and autoescaping.

Every piece of a page is :class:`~markupsafe.Markup` made by a template, or text that is escaped where it is used:
values from result records (task names, labels, sentences) are never markup. The renderer (:mod:`.render`) builds
a section's fragment from its content with :func:`join` (plain strings in it are escaped) and :func:`para`,
:func:`heading`, :func:`bullets`, :func:`table`, :func:`figure`. The only markup written in Python is fixed prose of
the sections with inline emphasis, marked with ``Markup(...)`` where it is defined; ``Markup(...).format(...)``
escapes what it fills in.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

import jinja2
from markupsafe import Markup, escape

__all__ = ["Markup", "bullets", "escape", "figure", "heading", "join", "page", "para", "table"]


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The templates shipped in ``privnlu/report/templates``, autoescaped; an undefined name is an error."""
    return jinja2.Environment(loader=jinja2.PackageLoader("privnlu.report", "templates"),
                              autoescape=jinja2.select_autoescape(["html", "html.j2", "j2"], default=True),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _blocks():
    return environment().get_template("blocks.html.j2").module


def join(*parts: object) -> Markup:
    """The parts one after another: markup kept, anything else escaped as text (None and "" left out)."""
    return Markup("").join(p for p in parts if p is not None and p != "")


def table(headers: Iterable[object], rows: Iterable[Iterable[object]], cls: str | None = None) -> Markup:
    """An HTML table of text cells (``cls``: its CSS class)."""
    return Markup(_blocks().table(list(headers), [list(r) for r in rows], cls))


def figure(src: str, alt: str) -> Markup:
    """An image tag for a figure file beside the page."""
    return Markup(_blocks().figure(src, alt))


def para(*text: object, cls: str | None = None) -> Markup:
    """One paragraph of the given parts (``cls``: its CSS class, e.g. ``"note"``)."""
    return Markup(_blocks().para(join(*text), cls))


def heading(level: int, *text: object) -> Markup:
    """A heading ``<h{level}>`` inside a section (3 or 4: the page has h1, sections h2)."""
    if level not in (3, 4, 5):
        raise ValueError(f"section headings are h3 to h5, not h{level}")
    return Markup(_blocks().heading(level, join(*text)))


def bullets(items: Iterable[object]) -> Markup:
    """An unordered list, one item per entry."""
    return Markup(_blocks().bullets(list(items)))


def page(**values: object) -> str:
    """The whole report page (``page.html.j2``)."""
    return environment().get_template("page.html.j2").render(**values)
