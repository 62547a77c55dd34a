"""The report's section registry.

A section is a function ``build(records) -> Content | None`` registered with :func:`section`: it returns the blocks
of :mod:`.content` (tables, paragraphs, figures), or None when it has nothing to show, and :mod:`.render` writes
them as the HTML page or as Markdown. A section declares the record kinds it reads (``kinds=``) and receives only
those records (dicts from the results JSONs), optionally only those for which its ``where`` holds; a section with
no such record is not called. Later features add a module to :data:`privnlu.report.SECTION_MODULES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..io import safe_filename
from ..params import plural  # noqa: F401 (re-exported for the sections)
from . import markup
from .content import Content
from .markup import Markup

Build = Callable[[list[dict]], "Content | None"]
Where = Callable[[dict], bool]


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    order: int
    build: Build
    #: the record kinds the section reads (None: every record)
    kinds: frozenset[str] | None = None
    #: which of those records it reads (None: all of them)
    where: Where | None = None

    def select(self, records: list[dict]) -> list[dict]:
        """The records this section reads, in the order given."""
        return [r for r in records if (self.kinds is None or r.get("kind") in self.kinds)
                and (self.where is None or self.where(r))]

    def content(self, records: list[dict]) -> Content | None:
        """What the section shows for ``records`` (None: nothing, e.g. none of them is of its kinds)."""
        mine = self.select(records)
        return self.build(mine) if mine else None


SECTIONS: dict[str, Section] = {}


def section(name: str, title: str, order: int = 100, *, kinds: Iterable[str] | None = None,
            where: Where | None = None) -> Callable[[Build], Build]:
    """Decorator: register ``build`` as a report section that reads the records of ``kinds`` (None: all) for which
    ``where(record)`` holds (None: all); it is called only when there is at least one."""

    def deco(fn: Build) -> Build:
        SECTIONS[name] = Section(name, title, order, fn, None if kinds is None else frozenset(kinds), where)
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
