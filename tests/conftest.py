"""Shared fixtures: a tiny random-init BERT (fast logic tests), the command-line prologue, GLUE-data skips.

Tests live in folders that mirror the packages (``unit/<package>/``, ``cli/``, ``integration/``, ``repository/``,
``security/``); every folder is on ``sys.path``, so shared helpers import by module name wherever they live
(``from federated_helpers import InProcessGrid``, ``from test_federated import check_wire``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TESTS = Path(__file__).resolve().parent
for _folder in sorted({TESTS, *(p.parent for p in TESTS.rglob("test_*.py"))}, reverse=True):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


@pytest.fixture()
def tiny_cli(tiny_model, cache_dir) -> list[str]:
    """The prologue of a command run on the tiny model: ``--model``, ``--cache-dir`` and ``--quiet``."""
    return ["--model", str(tiny_model), "--cache-dir", str(cache_dir), "--quiet"]


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


def toy_glue_dir(root: Path, n_train: int) -> Path:
    """A tiny separable SST-2 in the GLUE layout: ``n_train`` train rows, the first half of them as dev."""
    rows = [f"{'a fine good film' if i % 2 else 'a bad dull film'} number {i}\t{i % 2}\n" for i in range(n_train)]
    write(root / "glue" / "SST-2" / "train.tsv", "sentence\tlabel\n" + "".join(rows))
    write(root / "glue" / "SST-2" / "dev.tsv", "sentence\tlabel\n" + "".join(rows[: n_train // 2]))
    return root / "glue"


@pytest.fixture()
def toy_glue(tmp_path) -> Path:
    """60 train and 30 dev rows (modules that need another size override this fixture)."""
    return toy_glue_dir(tmp_path, 60)


def train_once(env: tuple[Path, list[str]], name: str, *extra: str) -> Path:
    """``privnlu train`` into ``root/name`` with the module's common arguments, once per module."""
    from privnlu.cli.main import main

    root, args = env
    out = root / name
    if not (out / "result.json").exists():
        assert main(["train", *args, *extra, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def joint_and_frozen_runs(tmp_path_factory, tiny_model) -> Path:
    """One joint and one frozen tiny run (``root/joint``, ``root/frozen``) on a 24-row toy SST-2."""
    root = tmp_path_factory.mktemp("runs")
    glue = toy_glue_dir(root, 24)
    env = (root, ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
                  str(root / "cache"), "--quiet", "--batch-size", "8", "--epochs", "1"])
    for mode in ("joint", "frozen"):
        train_once(env, mode, "--mode", mode)
    return root


def checkpoint_tensors(run: Path, group: str) -> dict:
    """The tensors of ``group`` (``modules.head``, ``params``, ...) in a run's ``checkpoint.safetensors``, keyed
    without the group prefix."""
    from safetensors.torch import load_file

    return {k.removeprefix(group + "."): v for k, v in load_file(str(run / "checkpoint.safetensors")).items()
            if k.startswith(group + ".")}


@pytest.fixture()
def flower_task_identity() -> None:
    """The task identity a Flower run in this process needs (federated modules use it for every test)."""
    from privnlu.federated.inprocess import ensure_task_identity

    ensure_task_identity()


@pytest.fixture(scope="session")
def tiny3(tmp_path_factory) -> Path:
    """A 3-layer tiny BERT, 32 wide: with [CLS] pooling the last layer's gradient only sees [CLS]'s query, so the
    span attack's second layer must not be the last."""
    from privnlu.models.tiny import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("tiny3") / "bert", layers=3)


def predict_refusal(folder: Path, monkeypatch, capsys) -> str:
    """``privnlu predict`` on a model folder whose claim must be refused: one line, exit 2, before the head loads;
    returns the line."""
    import privnlu.model_folder.predict as predict
    from privnlu.cli.main import main

    def no_loading(*args, **kwargs):
        raise AssertionError("the head was loaded before the claim was checked")

    monkeypatch.setattr(predict, "load_head", no_loading)
    capsys.readouterr()
    code = main(["predict", "--run", str(folder), "--text", "a fine good film"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "privnlu.json" in err, err
    return err


def tiny_model_folder(root: Path, tiny_model: Path, *extra: str) -> Path:
    """The model folder of a tiny frozen ``privnlu train`` run on a 24-row toy SST-2 under ``root`` (``extra``: the
    scheme's options)."""
    glue = toy_glue_dir(root, 24)
    env = (root, ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
                  str(root / "cache"), "--quiet", "--batch-size", "8", "--epochs", "1", *extra])
    return train_once(env, "run") / "model"


def without_release_notice(err: str) -> str:
    """stderr without the one-line notice of an older release command (``encode``, ``dp encode``, ``dchi
    privatize``; the notice itself is tested in test_release_command.py)."""
    return "".join(line for line in err.splitlines(keepends=True) if "is now 'privnlu release --scheme" not in line)
