"""Readers for the standard GLUE TSV layout.

Quirks handled (see ``PROVENANCE.md`` beside the GLUE data): a UTF-8 BOM on
some headers, no header in CoLA, and bare ``"`` characters in text fields, so
files are read with ``csv.QUOTE_NONE``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..errors import PrivnluError
from .dataset import TextDataset, check_texts, read_utf8, regression_value

csv.field_size_limit(2**31 - 1)


@dataclass(frozen=True)
class GlueLayout:
    """Which columns hold the texts and the label, and how the file starts."""

    text_a: int | str
    label: int | str
    text_b: int | str | None = None
    header: bool = True
    min_columns: int = 2


def read_tsv_rows(path: Path) -> tuple[list[str] | None, list[list[str]]]:
    """Rows of a GLUE TSV file (header separately), with clear errors."""
    lines = read_utf8(path).splitlines()
    rows = list(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
    return None, rows


def read_glue_split(
    path: Path, layout: GlueLayout, *, name: str, split: str, label_names: tuple[str, ...]
) -> TextDataset:
    """Parse one GLUE split into a :class:`TextDataset`."""
    _, rows = read_tsv_rows(path)
    rows = [r for r in rows if r]
    if layout.header:
        if not rows:
            raise PrivnluError(f"{path}: empty file; expected a header line")
        header, rows = rows[0], rows[1:]
        col = {h.strip(): i for i, h in enumerate(header)}
    else:
        col = {}

    def index(c: int | str) -> int:
        if isinstance(c, int):
            return c
        if c not in col:
            raise PrivnluError(f"{path}: malformed header, column '{c}' missing (found {list(col)})")
        return col[c]

    ia, il = index(layout.text_a), index(layout.label)
    ib = None if layout.text_b is None else index(layout.text_b)
    need = max(i for i in (ia, il, ib) if i is not None) + 1
    texts_a: list[str] = []
    texts_b: list[str] = []
    labels: list = []
    regression = not label_names
    lookup = {n: i for i, n in enumerate(label_names)}
    for lineno, r in enumerate(rows, start=2 if layout.header else 1):
        if len(r) < need:
            raise PrivnluError(f"{path}:{lineno}: malformed row, {len(r)} columns where {need} are needed")
        raw_label = r[il].strip()
        if regression:
            labels.append(regression_value(raw_label, f"{path}:{lineno}"))
        else:
            if raw_label not in lookup:
                raise PrivnluError(
                    f"{path}:{lineno}: label '{raw_label}' is not one of the task's labels {list(label_names)}"
                )
            labels.append(lookup[raw_label])
        texts_a.append(r[ia])
        if ib is not None:
            texts_b.append(r[ib])
    if not texts_a:
        raise PrivnluError(f"{path}: no examples found")
    check_texts(texts_a, str(path))
    if ib is not None:
        check_texts(texts_b, str(path))
    return TextDataset(
        name=name,
        split=split,
        texts_a=texts_a,
        texts_b=texts_b if ib is not None else None,
        labels=labels,
        label_names=label_names,
        meta={"path": str(path)},
    )
