"""Public corpora: unlabelled text that TextHide-inter mixes in and that attacks use as distractors.

``wiki`` (packaged Wikipedia summaries), ``tweets``, ``bbc``, ``qnli-dev`` (GLUE QNLI dev, needs the GLUE folder),
``mixed`` (all four, interleaved by a fixed public permutation), or a text file with one sentence per line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import PrivnluError
from .dataset import TextDataset, read_utf8
from .embedded import _shuffled, _tweets, _unlabelled, bbc_sentences, load_wiki, wiki_sentences
from .tasks import get_task

PUBLIC_NAMES = ("wiki", "tweets", "bbc", "qnli-dev", "mixed")


def qnli_dev_sentences(data_dir: str | None = None) -> list[str]:
    """Questions and sentences of GLUE QNLI dev, deduplicated (labels dropped). Needs the GLUE data folder."""
    ds = get_task("qnli").load("dev", data_dir)
    seen: set[str] = set()
    out = []
    for t in list(ds.texts_a) + list(ds.texts_b or []):
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def load_public(name: str, limit: int | None = None, data_dir: str | None = None) -> TextDataset:
    """A public corpus by name: ``wiki``, ``tweets`` (texts only), ``bbc`` (sentences), ``qnli-dev`` or ``mixed``
    (all four, interleaved by a fixed public permutation)."""
    if name == "wiki":
        return load_wiki("all", limit=limit)
    if name == "tweets":
        return _unlabelled("tweets", _shuffled(list(_tweets()[0])), limit)
    if name == "bbc":
        return _unlabelled("bbc", _shuffled(list(bbc_sentences())), limit)
    if name == "qnli-dev":
        return _unlabelled("qnli-dev", _shuffled(qnli_dev_sentences(data_dir)), limit)
    if name == "mixed":
        texts = list(wiki_sentences()) + list(_tweets()[0]) + list(bbc_sentences()) + qnli_dev_sentences(data_dir)
        return _unlabelled("mixed", _shuffled(list(dict.fromkeys(texts))), limit)
    raise PrivnluError(f"unknown public corpus '{name}'")


PUBLIC_CORPORA: dict[str, Callable[[int | None], TextDataset]] = {
    "wiki": lambda limit: load_wiki("all", limit=limit),
    **{n: (lambda limit, n=n: load_public(n, limit)) for n in PUBLIC_NAMES if n != "wiki"},
}


def load_public_corpus(name: str, limit: int | None = None) -> TextDataset:
    """An unlabelled public corpus (``wiki``) or a text file with one sentence per line."""
    if name in PUBLIC_CORPORA:
        return PUBLIC_CORPORA[name](limit)
    path = Path(name)
    if not path.is_file():
        raise PrivnluError(f"unknown public corpus '{name}': use {', '.join(PUBLIC_CORPORA)} or a text file with one sentence per line")
    lines = [ln.strip() for ln in read_utf8(path).splitlines() if ln.strip()]
    if not lines:
        raise PrivnluError(f"{path}: the public corpus is empty")
    lines = lines[:limit] if limit else lines
    return TextDataset(name=path.stem, split="all", texts_a=lines, labels=[0] * len(lines), label_names=("unlabelled",))
