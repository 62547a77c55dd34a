"""The papers' reported numbers, as data with their source, and the paper / ours / difference cell.

Each paper has one module here (``huang2020``, ``xie2021``, ``xie2022``, ``qu2021``, ...) that calls
:func:`register` with :class:`PaperValue` records transcribed from the papers
(cited in :data:`CITATIONS`). A value that exists
only in a figure is recorded with ``value=None`` and the claim the text makes (``claim``). Report sections and
recipes look values up with :func:`lookup` and render them with :func:`compare` / :func:`compare_cells`.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

PAPERS = {
    "huang2020": "Huang et al. 2020, TextHide",
    "xie2021": "Xie & Hong 2021, reconstruction attack",
    "xie2022": "Xie & Hong 2022, DP instance encoding",
    "qu2021": "Qu et al. 2021, privacy-adaptive BERT",
    "petrov2024": "Petrov et al. 2024, DAGER (NeurIPS 2024)",
}
#: each paper cited by its authors, title, venue and year
CITATIONS = {
    "huang2020": "Huang, Song, Chen, Li & Arora, *TextHide: Tackling Data Privacy in Language Understanding Tasks*, Findings of EMNLP 2020",
    "xie2021": "Xie & Hong, *Reconstruction Attack on Instance Encoding for Language Understanding*, EMNLP 2021",
    "xie2022": "Xie & Hong, *Differentially Private Instance Encoding against Privacy Attacks*, NAACL 2022 Student Research Workshop",
    "qu2021": "Qu, Kong, Yang, Zhang, Bendersky & Najork, *Privacy-Adaptive BERT for Natural Language Understanding*, arXiv preprint 2021",
    "petrov2024": "Petrov, Dimitrov, Baader, Muller & Vechev, *DAGER: Exact Gradient Inversion for Large Language Models*, NeurIPS 2024",
}
# every module under this package that registers values; a module added later is listed here
MODULES: list[str] = ["huang2020", "xie2022", "huang2020_gradient", "qu2021", "xie2021", "huang2020_search", "dp_sgd", "petrov2024"]


@dataclass(frozen=True)
class PaperValue:
    """One number (or one textual claim) reported by a paper.

    ``source`` names the table or figure ("Table 1", "Figure 2"); ``row`` and ``column`` name the cell as the
    paper labels it. ``scale`` is the unit the value is in ("percent", "fraction", "points", "" for raw).
    """

    paper: str
    source: str
    row: str
    column: str
    value: float | None
    scale: str = "percent"
    claim: str = ""
    note: str = ""

    def cite(self) -> str:
        return f"{PAPERS.get(self.paper, self.paper)}, {self.source}"


_REGISTRY: dict[tuple[str, str, str, str], PaperValue] = {}
_loaded = False


def register(*values: PaperValue) -> None:
    """Add values; a (paper, source, row, column) key may be registered once."""
    for v in values:
        key = (v.paper, v.source, v.row, v.column)
        if key in _REGISTRY and _REGISTRY[key] != v:
            raise ValueError(f"paper value registered twice with different content: {key}")
        _REGISTRY[key] = v


def _load() -> None:
    global _loaded
    if not _loaded:
        for name in MODULES:
            importlib.import_module(f"{__name__}.{name}")
        _loaded = True


def lookup(paper: str, source: str, row: str, column: str) -> PaperValue | None:
    """The registered value of one cell, or None."""
    _load()
    return _REGISTRY.get((paper, source, row, column))


def values(paper: str | None = None, source: str | None = None) -> list[PaperValue]:
    """All registered values, optionally of one paper and one table or figure, in registration order."""
    _load()
    return [v for v in _REGISTRY.values()
            if (paper is None or v.paper == paper) and (source is None or v.source == source)]


def compare(ours: float | None, paper: PaperValue | None) -> tuple[float | None, float | None, float | None]:
    """(paper, ours, ours - paper); None where either side is missing or not finite."""
    p = paper.value if paper is not None else None
    if ours is not None and not math.isfinite(ours):
        ours = None
    diff = ours - p if (ours is not None and p is not None) else None
    return p, ours, diff


def compare_cells(ours: float | None, paper: PaperValue | None, *, digits: int = 1) -> list[str]:
    """Three report cells: the paper's number (or "claim only"/"-"), ours, and the signed difference."""
    p, o, d = compare(ours, paper)
    if p is not None:
        pc = f"{p:.{digits}f}"
    else:
        pc = "claim only" if (paper is not None and paper.claim) else "-"
    oc = f"{o:.{digits}f}" if o is not None else "-"
    dc = f"{d:+.{digits}f}" if d is not None else "-"
    return [pc, oc, dc]
