"""Loaders for a user's own CSV, TSV or JSONL files with named columns.

Every row is checked before any work, and a problem is one line naming the file and line: a JSONL row without
the label (or a text) key, a null or empty label, a CSV/TSV row with more or fewer fields than the header (an
unquoted comma or tab), a regression label that is not a finite number. Training labels need at least two
classes; a class seen once beside a class seen a hundred times as often is probably a typo and gets a warning
naming its row (training goes on with it).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import PrivnluError
from .dataset import TextDataset, check_classes, check_texts, read_utf8, regression_value

SUFFIXES = (".csv", ".tsv", ".jsonl")


def _read_records(path: Path) -> list[dict]:
    """The rows of a CSV/TSV (as ``csv.DictReader`` gives them: a field beyond the header's under ``None``, a missing
    one as ``None``) or JSONL file (each a JSON object)."""
    text = read_utf8(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [rec for _, rec in _jsonl_rows(path, text)]
    if suffix in (".csv", ".tsv"):
        delim, quoting = _dialect(suffix)
        return list(csv.DictReader(text.splitlines(), delimiter=delim, quoting=quoting))
    raise PrivnluError(f"{path}: unsupported file type '{suffix}' (use .csv, .tsv or .jsonl)")


def _dialect(suffix: str) -> tuple[str, int]:
    return ("\t", csv.QUOTE_NONE) if suffix == ".tsv" else (",", csv.QUOTE_MINIMAL)


def jsonl_records(path: Path, lines: Iterable[str]) -> Iterator[tuple[int, dict]]:
    """(line number, object) of every non-blank line of a JSON Lines file, read lazily; a malformed line, or one
    that is not a JSON object, is one line naming the place."""
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise PrivnluError(f"{path}:{lineno}: malformed JSON ({msg})") from None
        if not isinstance(rec, dict):
            raise PrivnluError(f"{path}:{lineno}: each line must be a JSON object")
        yield lineno, rec


def _jsonl_rows(path: Path, text: str) -> list[tuple[str, dict]]:
    return [(f"{path}:{lineno}", rec) for lineno, rec in jsonl_records(path, text.splitlines())]


def read_rows(path: str | Path) -> list[tuple[str, dict]]:
    """``(where, row)`` for every row of a CSV, TSV or JSONL file, ``where`` naming the file and line; a CSV/TSV
    row with another number of fields than the header is refused (one line)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise PrivnluError(f"{path}: unsupported file type '{suffix}' (use .csv, .tsv or .jsonl)")
    text = read_utf8(path)
    if suffix == ".jsonl":
        return _jsonl_rows(path, text)
    delim, quoting = _dialect(suffix)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, quoting=quoting)
    try:
        header = next((r for r in reader if r), None)
        if header is None:
            return []
        rows = []
        for fields in reader:
            if not fields:
                continue
            where = f"{path}:{reader.line_num}"
            if len(fields) != len(header):
                sep = "tab" if suffix == ".tsv" else "comma"
                more = len(fields) > len(header)
                hint = (f"an unquoted {sep} in a text? quote the field" if more and suffix == ".csv" else
                        f"a {sep} inside a text?" if more else "a missing field?")
                raise PrivnluError(f"{where}: row has {len(fields)} fields where the header has {len(header)} ({hint})")
            rows.append((where, dict(zip(header, fields))))
    except csv.Error as exc:
        raise PrivnluError(f"{path}:{reader.line_num}: malformed {suffix[1:].upper()} ({exc})") from None
    return rows


def _label(where: str, row: dict, col: str) -> object:
    """The row's label value, present and not null or empty."""
    if col not in row:
        raise PrivnluError(f"{where}: row has no '{col}' key (its label); every row needs one")
    value = row[col]
    if value is None:
        raise PrivnluError(f"{where}: the label '{col}' is null; give every row a label")
    if isinstance(value, (dict, list)):
        raise PrivnluError(f"{where}: the label '{col}' is a JSON {type(value).__name__}, not a class name or number")
    if isinstance(value, str) and not value.strip():
        raise PrivnluError(f"{where}: the label '{col}' is empty; give every row a label")
    return value


def _text(where: str, row: dict, col: str) -> str:
    if col not in row:
        raise PrivnluError(f"{where}: row has no '{col}' key (its text)")
    value = row[col]
    if isinstance(value, (dict, list)):
        raise PrivnluError(f"{where}: the text '{col}' is a JSON {type(value).__name__}, not a text")
    return "" if value is None else str(value)


def load_table(
    path: str | Path,
    *,
    text_col: str = "text",
    label_col: str = "label",
    text_pair_col: str | None = None,
    label_names: tuple[str, ...] | None = None,
    regression: bool = False,
    split: str = "train",
    warn: Callable[[str], None] | None = None,
) -> TextDataset:
    """Read ``path`` into a :class:`TextDataset` (every row checked; see the module docstring).

    Class names are the sorted distinct labels unless ``label_names`` fixes them
    (pass the train set's names when loading dev, so a new label is refused). ``split="train"``
    without ``label_names`` also checks the classes (two at least; a typo-like rare class is warned about
    through ``warn``, by default one line on stderr).
    """
    path = Path(path)
    records = read_rows(path)
    if not records:
        raise PrivnluError(f"{path}: no examples found")
    first = records[0][1]
    for col in (text_col, label_col, text_pair_col):
        if col is not None and col not in first:
            raise PrivnluError(f"{path}: column '{col}' missing (found {sorted(first)})")
    texts_a = [_text(w, r, text_col) for w, r in records]
    texts_b = [_text(w, r, text_pair_col) for w, r in records] if text_pair_col else None
    values = [_label(w, r, label_col) for w, r in records]
    where = [w for w, _ in records]
    check_texts(texts_a, str(path))
    if texts_b is not None:
        check_texts(texts_b, str(path))
    if regression:
        labels: list = [regression_value(v, w) for v, w in zip(values, where)]
        names: tuple[str, ...] = ()
    else:
        raw = [str(v).strip() for v in values]
        if label_names:
            names = tuple(label_names)
        else:
            names = tuple(sorted(set(raw)))
            if split == "train":
                check_classes(raw, where, str(path), warn=warn)
        lookup = {n: i for i, n in enumerate(names)}
        bad = next((i for i, x in enumerate(raw) if x not in lookup), None)
        if bad is not None:
            raise PrivnluError(f"{where[bad]}: label '{raw[bad]}' is not one of the task's labels {list(names)}")
        labels = [lookup[x] for x in raw]
    return TextDataset(
        name=path.stem, split=split, texts_a=texts_a, texts_b=texts_b, labels=labels, label_names=names,
        meta={"path": str(path)},
    )

