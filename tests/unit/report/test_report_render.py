"""Report sections return content; one renderer writes it as the HTML page or as Markdown."""

from __future__ import annotations

import dataclasses

import pytest

from privnlu.report.content import (Bullets, Figure, Heading, Para, Table, code_text, either, html_only, markdown_only,
                                    note)
from privnlu.report.markup import Markup
from privnlu.report.render import md_text, to_html, to_markdown


class _NoFigures:
    """A context that records the figures it is asked to save."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def figure(self, fig, name, alt):
        self.names.append(name)
        return Markup(f'<img src="{name}.png">')


def test_blocks_are_immutable():
    t = Table(["a", "b"], [[1, 2.5]])
    assert t.columns == ("a", "b") and t.rows == ((1, 2.5),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.cls = "text"  # type: ignore[misc]


def test_one_content_two_outputs():
    drawn = []
    content = [Heading(3, "sst2"), Table(["x", "score"], [["a|b", 1.234], [None, 2]], cls="text"), None,
               Figure(lambda: drawn.append(1) or "fig", "f", "alt"), note("a <note>"), Bullets(["one", "two"]),
               either(Para("page only"), Para("docs only")), code_text("run `privnlu report`")]
    md = to_markdown(content)
    assert md == ("**sst2**\n\n| x | score |\n|---|---|\n| a\\|b | 1.23 |\n|  | 2 |\n\na <note>\n\n- one\n- two\n\n"
                  "docs only\n\nrun `privnlu report`")
    assert not drawn  # Markdown has no figures, and draws none
    ctx = _NoFigures()
    page = str(to_html(content, ctx))
    assert drawn == [1] and ctx.names == ["f"]
    assert page.startswith("<h3>sst2</h3><table class=\"text\">") and "<td>a|b</td><td>1.23</td>" in page
    assert '<p class="note">a &lt;note&gt;</p>' in page and "<ul><li>one</li><li>two</li></ul>" in page
    assert "<p>page only</p>" in page and "docs only" not in page and "<p>run privnlu report</p>" in page


def test_markup_prose_becomes_markdown_emphasis():
    assert md_text(Markup("<b>strict</b> and <em>correct</em> &lt;= 1")) == "**strict** and *correct* <= 1"
    assert md_text("<b>data</b>") == "<b>data</b>"  # text from records is never read as markup
    assert to_markdown([html_only(Para("x")), markdown_only(Para("y"))]) == "y"


def test_every_section_declares_the_records_it_reads():
    from privnlu.report import SECTIONS, load_sections

    load_sections()
    assert len(SECTIONS) >= 35
    assert all(sec.kinds for sec in SECTIONS.values()), [s.name for s in SECTIONS.values() if not s.kinds]
    assert SECTIONS["benchmarks"].content([{"kind": "train"}]) is None  # not its kind: never called
