"""The texts ``privnlu predict`` classifies and the file its answers go to, streamed in bounded memory.

:func:`open_inputs` checks every row of an ``--input`` file in one streamed pass before any model is loaded (a bad
row is one line naming it), counts them for the progress bar, and then hands the texts out in chunks read afresh
from the file (:meth:`Inputs.chunks`), so a file of any length is never held in memory at once. :class:`RowWriter`
writes each chunk's answers as they come: to stdout as JSON lines, or to ``--out`` (CSV, TSV or JSONL) through a
temporary file renamed into place at the end, so a failed run leaves no partial file.

A ``.txt`` input holds one text per line (blank lines skipped; a UTF-8 BOM allowed); ``.csv``, ``.tsv`` and
``.jsonl`` name their text (and pair) columns.
"""

from __future__ import annotations

import contextlib
import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from ..data.generic import _dialect, jsonl_records
from ..errors import PrivnluError

INPUT_SUFFIXES = (".txt", ".csv", ".tsv", ".jsonl")
#: texts read from the input file per chunk (the memory a run holds at once)
CHUNK = 1024


@dataclass(frozen=True)
class Inputs:
    """The texts to classify: given one by one (``texts``), or a file read chunk by chunk."""

    count: int
    texts: list[str] | None = None
    pairs: list[str] | None = None
    path: Path | None = None
    text_col: str = "text"
    text_pair_col: str | None = None

    @property
    def has_pairs(self) -> bool:
        return self.pairs is not None or bool(self.text_pair_col)

    def chunks(self, size: int = CHUNK) -> Iterator[tuple[list[str], list[str] | None]]:
        """``(texts, pairs)`` of at most ``size`` texts each, in input order."""
        if self.path is None:
            assert self.texts is not None
            for s in range(0, len(self.texts), size):
                yield self.texts[s: s + size], None if self.pairs is None else self.pairs[s: s + size]
            return
        texts: list[str] = []
        pairs: list[str] | None = [] if self.text_pair_col else None
        for text, pair in _rows(self.path, self.text_col, self.text_pair_col):
            texts.append(text)
            if pairs is not None:
                pairs.append(pair or "")
            if len(texts) == size:
                yield texts, pairs
                texts, pairs = [], [] if self.text_pair_col else None
        if texts:
            yield texts, pairs


def open_inputs(text: list[str] | None, text_pair: list[str] | None, input: str | None, *, text_col: str = "text",
                text_pair_col: str | None = None) -> Inputs:
    """The texts (and pair texts) given one by one (``text``, ``text_pair``) or in a file (``input``), every row of
    the file checked in one streamed pass (one line naming a bad row, before any work)."""
    if bool(text) == bool(input):
        raise PrivnluError("give the texts with --text (repeatable) or --input FILE, one of them")
    if text:
        if text_pair and len(text_pair) != len(text):
            raise PrivnluError(f"{len(text)} --text but {len(text_pair)} --text-pair; give one pair per text")
        return Inputs(len(text), list(text), list(text_pair) if text_pair else None)
    if text_pair:
        raise PrivnluError("--text-pair goes with --text; with --input, name the column with --text-pair-col")
    assert input is not None
    path = Path(input)
    if not path.is_file():
        raise PrivnluError(f"--input {path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in INPUT_SUFFIXES:
        raise PrivnluError(f"--input {path}: unsupported file type '{suffix}' (use {', '.join(INPUT_SUFFIXES)})")
    if suffix == ".txt" and text_pair_col:
        raise PrivnluError("--text-pair-col needs a .csv, .tsv or .jsonl --input")
    count = sum(1 for _ in _rows(path, text_col, text_pair_col))
    if not count:
        raise PrivnluError(f"--input {path}: no texts found")
    return Inputs(count, path=path, text_col=text_col, text_pair_col=text_pair_col)


@contextlib.contextmanager
def _open(path: Path) -> Iterator[IO[str]]:
    """The file as UTF-8 text (a BOM allowed), decoding errors as one line."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        try:
            yield fh
        except UnicodeDecodeError:
            raise PrivnluError(f"--input {path}: not UTF-8 text; re-encode the file as UTF-8") from None


def _rows(path: Path, text_col: str, text_pair_col: str | None) -> Iterator[tuple[str, str | None]]:
    """Every ``(text, pair)`` of the file, streamed; a malformed row is one line naming it."""
    suffix = path.suffix.lower()
    with _open(path) as fh:
        if suffix == ".txt":
            for line in fh:
                for t in line.splitlines():
                    if t.strip():
                        yield t, None
            return
        cols = [c for c in (text_col, text_pair_col) if c]
        records = _jsonl(path, fh) if suffix == ".jsonl" else csv.DictReader(fh, delimiter=_dialect(suffix)[0],
                                                                             quoting=_dialect(suffix)[1])
        for n, r in enumerate(records, start=1):
            if n == 1:
                for col in cols:
                    if col not in r:
                        raise PrivnluError(f"--input {path}: column '{col}' missing (found {sorted(map(str, r))})")
            if None in r:  # csv.DictReader's place for the fields beyond the header's
                raise PrivnluError(f"--input {path}: row {n} has more fields than the header "
                                   f"({len(r) - 1 + len(r[None])} > {len(r) - 1}); quote a text that holds the "
                                   "delimiter")
            if any(r.get(c) is None for c in cols) and suffix != ".jsonl":
                raise PrivnluError(f"--input {path}: row {n} has fewer fields than the header")
            missing = next((c for c in cols if c not in r), None)
            if missing is not None:  # a JSON line without the column (null is an empty text)
                raise PrivnluError(f"--input {path}: row {n} has no column '{missing}'")
            yield str(r[text_col] or ""), (str(r[text_pair_col] or "") if text_pair_col else None)


def _jsonl(path: Path, fh: IO[str]) -> Iterator[dict]:
    return (rec for _, rec in jsonl_records(path, fh))


class RowWriter:
    """Answers written as they come: JSON lines on ``stream`` (stdout), or a CSV/TSV/JSONL file (a header from the
    first rows) staged beside ``out`` and renamed into place by :meth:`close`."""

    def __init__(self, out: Path | None, stream: IO[str]) -> None:
        self.out, self.suffix = out, (out.suffix.lower() if out is not None else ".jsonl")
        self.written = 0
        self._stack = contextlib.ExitStack()
        if out is None:
            self.fh = stream
        else:
            from ..io import atomic_path

            staged = self._stack.enter_context(atomic_path(out))
            self.fh = self._stack.enter_context(open(staged, "w", encoding="utf-8", newline=""))
        self._csv: csv.DictWriter | None = None

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, *exc) -> None:
        self._stack.__exit__(*exc)  # the file is renamed into place only without an exception

    def write(self, rows: list[dict]) -> None:
        if self.suffix == ".jsonl":
            try:
                self.fh.write("".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows))
            except ValueError:
                raise PrivnluError("a prediction is NaN or infinite; nothing more written") from None
        else:
            if self._csv is None and rows:
                fields = list(dict.fromkeys(k for r in rows for k in r))
                self._csv = csv.DictWriter(self.fh, fieldnames=fields, delimiter="\t" if self.suffix == ".tsv" else ",",
                                           lineterminator="\n")
                self._csv.writeheader()
            if self._csv is not None:
                self._csv.writerows(rows)
        self.fh.flush()
        self.written += len(rows)

