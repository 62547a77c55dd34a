"""Loaders for a user's own CSV, TSV or JSONL files with named columns."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..errors import PrivnluError
from .dataset import TextDataset, check_texts, read_utf8


def _read_records(path: Path) -> list[dict]:
    text = read_utf8(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PrivnluError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise PrivnluError(f"{path}:{lineno}: each line must be a JSON object")
            records.append(rec)
        return records
    if suffix in (".csv", ".tsv"):
        delim = "\t" if suffix == ".tsv" else ","
        quoting = csv.QUOTE_NONE if suffix == ".tsv" else csv.QUOTE_MINIMAL
        return list(csv.DictReader(text.splitlines(), delimiter=delim, quoting=quoting))
    raise PrivnluError(f"{path}: unsupported file type '{suffix}' (use .csv, .tsv or .jsonl)")


def load_table(
    path: str | Path,
    *,
    text_col: str = "text",
    label_col: str = "label",
    text_pair_col: str | None = None,
    label_names: tuple[str, ...] | None = None,
    regression: bool = False,
    split: str = "train",
) -> TextDataset:
    """Read ``path`` into a :class:`TextDataset`.

    Class names are the sorted distinct labels unless ``label_names`` fixes them
    (pass the train set's names when loading dev, so a new label is refused).
    """
    path = Path(path)
    records = _read_records(path)
    if not records:
        raise PrivnluError(f"{path}: no examples found")
    for col in (text_col, label_col, text_pair_col):
        if col is not None and col not in records[0]:
            raise PrivnluError(f"{path}: column '{col}' missing (found {sorted(records[0])})")
    texts_a = [str(r[text_col] or "") for r in records]
    texts_b = [str(r[text_pair_col] or "") for r in records] if text_pair_col else None
    raw = [str(r[label_col]).strip() for r in records]
    check_texts(texts_a, str(path))
    if texts_b is not None:
        check_texts(texts_b, str(path))
    if regression:
        try:
            labels: list = [float(x) for x in raw]
        except ValueError as exc:
            raise PrivnluError(f"{path}: a label is not a number ({exc})") from None
        names: tuple[str, ...] = ()
    else:
        names = tuple(label_names) if label_names else tuple(sorted(set(raw)))
        lookup = {n: i for i, n in enumerate(names)}
        bad = next((x for x in raw if x not in lookup), None)
        if bad is not None:
            raise PrivnluError(f"{path}: label '{bad}' is not one of the task's labels {list(names)}")
        labels = [lookup[x] for x in raw]
    return TextDataset(
        name=path.stem, split=split, texts_a=texts_a, texts_b=texts_b, labels=labels, label_names=names,
        meta={"path": str(path)},
    )
