"""The in-memory text dataset every loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
