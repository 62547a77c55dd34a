"""The in-memory text dataset every loader returns."""

from __future__ import annotations

import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import PrivnluError


@dataclass(frozen=True)
class TextDataset:
    """Sentences (or sentence pairs) with labels.

    ``labels`` are class indices for classification and floats for regression.
    ``label_names`` is empty for regression tasks.
    """

    name: str
    split: str
    texts_a: list[str]
    labels: list[float] | list[int]
    texts_b: list[str] | None = None
    label_names: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.texts_a)
        if len(self.labels) != n or (self.texts_b is not None and len(self.texts_b) != n):
            raise PrivnluError(f"{self.name}/{self.split}: texts and labels have different lengths")

    def __len__(self) -> int:
        return len(self.texts_a)

    @property
    def is_pair(self) -> bool:
        return self.texts_b is not None

    @property
    def is_regression(self) -> bool:
        return not self.label_names

    @property
    def num_labels(self) -> int:
        return 1 if self.is_regression else len(self.label_names)

    def subset(self, indices: list[int] | range) -> "TextDataset":
        idx = list(indices)
        return TextDataset(
            name=self.name,
            split=self.split,
            texts_a=[self.texts_a[i] for i in idx],
            texts_b=None if self.texts_b is None else [self.texts_b[i] for i in idx],
            labels=[self.labels[i] for i in idx],  # type: ignore[misc]
            label_names=self.label_names,
            meta={**self.meta, "subset": len(idx)},
        )

    def head(self, n: int | None) -> "TextDataset":
        """The first ``n`` examples (all when ``n`` is None)."""
        return self if n is None or n >= len(self) else self.subset(range(n))


def read_utf8(path: Path) -> str:
    """A data file's text (a UTF-8 BOM allowed), with one-line errors for a missing or non-UTF-8 file."""
    if not path.is_file():
        raise PrivnluError(f"data file not found: {path} (check the path, --data-dir or PRIVNLU_DATA)")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PrivnluError(f"{path}: not UTF-8 text (byte {exc.start}); re-encode the file as UTF-8") from None


def check_texts(texts: list[str], where: str) -> None:
    """Refuse empty texts with a message that names the first offending row."""
    for i, t in enumerate(texts):
        if not t or not t.strip():
            raise PrivnluError(f"{where}: row {i + 1} has an empty text; remove or fill it")


def check_utf8(path: Path, what: str = "input file") -> None:
    """One line naming the first line that is not UTF-8 text (the file is read line by line, never held whole)."""
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                raise PrivnluError(f"{what} {path}: line {no} is not UTF-8 text; re-encode the file as UTF-8") from None


def regression_value(raw: object, where: str) -> float:
    """A regression label: a finite number, or one line naming the row (``where``)."""
    if isinstance(raw, bool):
        raise PrivnluError(f"{where}: label {raw!r} is not a number")
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PrivnluError(f"{where}: label '{raw}' is not a number") from None
    if not math.isfinite(value):
        raise PrivnluError(f"{where}: label '{raw}' is not a finite number (NaN and infinity are not labels)")
    return value


#: a class this rare (or rarer) beside a class at least RARE_CLASS_RATIO times as common is likely a typo
RARE_CLASS_COUNT = 1
RARE_CLASS_RATIO = 100


def check_classes(raw: Sequence[str], rows: Sequence[str], source: str, *, warn=None) -> None:
    """Training labels: at least two classes (one line, else); a class seen :data:`RARE_CLASS_COUNT` time(s) beside
    one seen :data:`RARE_CLASS_RATIO` times as often or more gets a warning naming its row (``rows[i]`` says where
    label ``i`` is; ``warn`` defaults to one line on stderr)."""
    counts = Counter(raw)
    if len(counts) < 2:
        only = next(iter(counts), "")
        raise PrivnluError(f"{source}: every training label is '{only}'; a classifier needs at least two classes "
                           "(check --label-col, or use --regression for numbers)")
    most = max(counts.values())
    say = warn or (lambda msg: sys.stderr.write(f"privnlu: warning: {msg}\n"))
    for label, n in sorted(counts.items()):
        if n <= RARE_CLASS_COUNT and most >= RARE_CLASS_RATIO * n:
            say(f"{rows[raw.index(label)]}: label '{label}' appears {n} time(s) while another appears {most} times; "
                "a typo? (training goes on with it as a class)")
