"""Shared fixtures: a tiny random-init BERT (fast logic tests) and GLUE-data skips."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide random BERT with the bert-base-uncased vocabulary."""
    from privnlu.models.tiny import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.fixture()
def cache_dir(tmp_path) -> Path:
    return tmp_path / "cache"


def need_glue(task: str, split: str = "dev"):
    from privnlu.data import glue_data_available

    return pytest.mark.skipif(not glue_data_available(task, split), reason=f"GLUE {task}/{split} not found (../shared/data/glue or PRIVNLU_DATA)")


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return path
