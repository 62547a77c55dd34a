"""Checkpoints never run code: a planted pickle is refused in every resume path and never opened; the
safetensors + JSON pair is checked (hash, step, schema, shapes, finiteness) before anything is loaded."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

from privnlu.cli.main import main
from privnlu.data import get_task
from privnlu.errors import PrivnluError
from privnlu.models import checkpoint as ckpt
from privnlu.training import TrainConfig, fit


class Plant:
    """A pickle whose loading creates ``marker`` (what a hostile checkpoint would do with a shell command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def plant(path: Path, marker: Path, *, zip_format: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"epoch": 1, "payload": Plant(marker)}
    if zip_format:
        torch.save(blob, path)
    else:
        path.write_bytes(pickle.dumps(blob, protocol=4))
    return path


def test_the_planted_pickle_does_run_code_when_unpickled(tmp_path):
    """The control: the plant is live, so its marker's absence below means it was never unpickled."""
    marker = tmp_path / "marker"
    torch.load(plant(tmp_path / "x.pt", marker), weights_only=False)
    assert marker.exists()


def run_cli(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def assert_refused(code: int, err: str, legacy: Path, marker: Path) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(legacy) in err and "pickle" in err and "does not unpickle" in err
    assert not marker.exists()


@pytest.mark.parametrize("zip_format", [True, False])
def test_train_resume_refuses_a_pickle_checkpoint(tmp_path, capsys, tiny_model, zip_format):
    run, marker = tmp_path / "run", tmp_path / "marker"
    legacy = plant(run / "checkpoint.pt", marker, zip_format=zip_format)
    before = sorted(p.name for p in run.iterdir())
    code, err = run_cli(capsys, ["train", "--task", "tweets", "--model", str(tiny_model), "--train-limit", "20",
                                 "--dev-limit", "10", "--epochs", "1", "--out", str(run), "--resume", "--quiet"])
    assert_refused(code, err, legacy, marker)
    assert sorted(p.name for p in run.iterdir()) == before


def test_federated_resume_refuses_a_pickle_checkpoint(tmp_path, capsys, tiny_model):
    out, marker = tmp_path / "fed", tmp_path / "marker"
    legacy = plant(out / "checkpoint.pt", marker)
    code, err = run_cli(capsys, ["federated", "--task", "tweets", "--model", str(tiny_model), "--clients", "2",
                                 "--rounds", "1", "--train-limit", "20", "--dev-limit", "10", "--backend", "inprocess",
                                 "--cache-dir", str(tmp_path / "c"), "--out", str(out), "--resume", "--quiet"])
    assert_refused(code, err, legacy, marker)
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt"]


def test_federated_server_refuses_a_pickle_checkpoint(tmp_path, tiny_model):
    """The server itself (a ``flwr run`` deployment reaches it without the launcher) refuses too."""
    from privnlu.federated import FederatedConfig
    from privnlu.federated.server import run_server

    marker = tmp_path / "marker"
    plant(tmp_path / "checkpoint.pt", marker)
    cfg = FederatedConfig(task="tweets", model=str(tiny_model), clients=2, rounds=1, train_limit=20, dev_limit=10)
    with pytest.raises(PrivnluError, match="does not unpickle"):
        run_server(None, cfg, out=tmp_path, resume=True)  # type: ignore[arg-type]
    assert not marker.exists()


def test_dchi_pretrain_resume_refuses_a_pickle_checkpoint(tmp_path, capsys, tiny_model):
    out, marker = tmp_path / "pt", tmp_path / "marker"
    legacy = plant(out / "checkpoint.pt", marker)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"a sentence about topic {i}" for i in range(40)) + "\n")
    code, err = run_cli(capsys, ["dchi", "pretrain", "--model", str(tiny_model), "--corpus", str(corpus),
                                 "--objective", "denoising", "--eta", "30", "--steps", "2", "--warmup-steps", "2",
                                 "--batch-size", "4", "--max-length", "16", "--eval-size", "8", "--out", str(out),
                                 "--resume", "--quiet"])
    assert_refused(code, err, legacy, marker)


# -- the new format: checked before anything is loaded ---------------------------------------------------------

def small_run(ckpt_path: Path, *, epochs: int = 2, resume: bool = False) -> list[dict]:
    n, d = 32, 5
    g = torch.Generator().manual_seed(0)
    x, labels = torch.randn(n, d, generator=g), torch.randint(0, 2, (n,), generator=g)
    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    state = fit(task=get_task("sst2"), head=head, represent=lambda idx: x[idx],
                targets=torch.nn.functional.one_hot(labels, 2).float(), eval_sets=lambda: {"dev": (x, labels)},
                config=TrainConfig(epochs=epochs, batch_size=8, seed=0), checkpoint=ckpt_path, resume=resume,
                progress=False)
    return state.history


@pytest.fixture()
def saved(tmp_path) -> Path:
    path = tmp_path / "ckpt.pt"
    small_run(path)
    assert {p.name for p in tmp_path.iterdir()} == {"ckpt.safetensors", "ckpt.json"}
    return path


def test_a_checkpoint_is_safetensors_and_json_and_resumes(saved):
    tensors, state = ckpt.read(saved)
    assert state["epoch"] == 2 and "optimizer.state.0.exp_avg" in tensors and "rng.shuffle" in tensors
    assert tensors["rng.torch"].dtype == torch.uint8
    assert small_run(saved, resume=True) == state["history"]  # a finished run resumes to its end at once


def rewrite_json(path: Path, change) -> None:
    jpath = ckpt.files(path)[1]
    meta = json.loads(jpath.read_text())
    change(meta)
    jpath.write_text(json.dumps(meta))


@pytest.mark.parametrize("change, message", [
    (lambda m: m["state"].update(epoch="1"), "epoch"),
    (lambda m: m["state"]["optimizer"]["param_groups"][0].update(lr=-1.0), "not a number >= 0"),
    (lambda m: m["state"]["scheduler"].update(lr_lambdas=[{"__class__": "x"}]), "lr_lambdas"),
    (lambda m: m["state"].update(extra=1), "extra"),
    (lambda m: m.update(step=5), "another step"),
    (lambda m: m["state"].update(epoch=1), "fit this run"),
    (lambda m: m.update(format="something-else"), "format"),
], ids=["string-epoch", "negative-lr", "scheduler-lambda-object", "unknown-field", "step-mismatch",
        "epoch-without-history", "format"])
def test_a_tampered_json_is_one_line(saved, change, message):
    rewrite_json(saved, change)
    with pytest.raises(PrivnluError, match=message) as err:
        small_run(saved, resume=True)
    assert "\n" not in str(err.value)


def test_tensors_from_another_write_or_truncated_are_refused(saved):
    tpath, _ = ckpt.files(saved)
    data = tpath.read_bytes()
    tpath.write_bytes(data[: len(data) // 2])
    with pytest.raises(PrivnluError, match="truncated"):
        small_run(saved, resume=True)
    tpath.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(PrivnluError, match="SHA-256"):
        small_run(saved, resume=True)


def test_a_pickle_in_place_of_the_tensors_is_never_unpickled(saved, tmp_path):
    """Even with a JSON that names its hash and size, a pickle is refused, not loaded."""
    import hashlib

    tpath, _ = ckpt.files(saved)
    marker = tmp_path / "marker"
    plant(tpath, marker)
    data = tpath.read_bytes()
    rewrite_json(saved, lambda m: m.update(tensors_sha256=hashlib.sha256(data).hexdigest(), tensors_bytes=len(data)))
    with pytest.raises(PrivnluError, match="is a pickle"):
        small_run(saved, resume=True)
    assert not marker.exists()


def test_tensors_that_do_not_fit_the_model_are_refused(saved):
    from safetensors.torch import save

    tensors, _ = ckpt.read(saved)
    tensors["modules.head.0.weight"] = torch.zeros(3, 3)
    rewritten = ckpt.files(saved)[0]
    state = json.loads(ckpt.files(saved)[1].read_text())["state"]
    ckpt.save(saved, written_by="train", step=2, tensors=tensors, state=state)
    assert rewritten.exists()
    with pytest.raises(PrivnluError, match=r"modules.head.0.weight is float32 \[3, 3\]"):
        small_run(saved, resume=True)
    tensors["modules.head.0.weight"] = torch.full((8, 5), float("nan"))
    ckpt.save(saved, written_by="train", step=2, tensors=tensors, state=state)
    with pytest.raises(PrivnluError, match="NaN"):
        small_run(saved, resume=True)
    assert save  # safetensors is the only format written


def test_a_missing_half_of_the_pair_is_one_line(saved):
    ckpt.files(saved)[1].unlink()
    with pytest.raises(PrivnluError, match="incomplete checkpoint"):
        small_run(saved, resume=True)


def test_saving_replaces_an_older_pickle_checkpoint(tmp_path):
    """A fresh run (``train --force``) writes the new pair and removes the older pickle file, unopened."""
    marker = tmp_path / "marker"
    plant(tmp_path / "ckpt.pt", marker)
    small_run(tmp_path / "ckpt.pt")
    assert {p.name for p in tmp_path.iterdir()} == {"ckpt.safetensors", "ckpt.json"} and not marker.exists()


def test_dchi_finetune_refuses_a_pickle_checkpoint(tmp_path):
    """``dchi finetune`` continues from ``.<run>.ckpt.pt``'s pair on its own: an older pickle there is refused."""
    from privnlu.training import private_finetune as pf

    marker = tmp_path / "marker"
    legacy = plant(tmp_path / ".finetune_x.ckpt.pt", marker)
    assert ckpt.exists(legacy)
    with pytest.raises(PrivnluError, match="does not unpickle"):
        pf._restore(legacy, {}, {}, torch.Generator())
    assert not marker.exists()


def test_train_resume_from_a_truncated_checkpoint_is_one_line(tmp_path, capsys, tiny_model):
    run = tmp_path / "run"
    argv = ["train", "--task", "tweets", "--model", str(tiny_model), "--train-limit", "24", "--dev-limit", "12",
            "--epochs", "1", "--batch-size", "8", "--cache-dir", str(tmp_path / "cache"), "--out",
            str(run), "--quiet"]
    code, err = run_cli(capsys, argv)
    assert code == 0, err
    tpath, jpath = ckpt.files(run / "checkpoint.pt")
    assert tpath.is_file() and jpath.is_file() and not (run / "checkpoint.pt").exists()
    tpath.write_bytes(tpath.read_bytes()[:100])
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*")}
    code, err = run_cli(capsys, [*argv, "--resume"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "truncated" in err and str(tpath) in err, err
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*")} == before
