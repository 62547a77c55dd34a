"""``privnlu train --out FOLDER`` refuses a folder that holds a finished run before it loads any data, encoder or
engine (privnlu.training.run_folder)."""

from __future__ import annotations

import pytest

from privnlu.cli.main import main

from conftest import write


def fail(*args, **kwargs):
    raise AssertionError("data or an encoder was loaded before the run folder was checked")


def no_loading(monkeypatch) -> None:
    """Every loader of data and encoders fails, where it is defined and where the engine holds it."""
    import privnlu.data.tasks as tasks
    import privnlu.models.encoder as encoder
    import privnlu.training.engine as engine

    for module, names in ((tasks, ("register_table_task", "get_task")), (encoder, ("resolve_pooling", "load_encoder")),
                          (engine, ("resolve_pooling", "load_encoder", "load_splits", "prepare"))):
        for name in names:
            monkeypatch.setattr(module, name, fail)


@pytest.mark.parametrize("extra", [[], ["--scheme", "dp-sgd", "--dp-epsilon", "4"]])
def test_a_finished_run_is_refused_before_any_loading(extra, tmp_path, tiny_model, monkeypatch, capsys):
    run = tmp_path / "run"
    write(run / "result.json", "{}")
    write(tmp_path / "train.csv", "text,label\na good film,1\na bad film,0\n")
    write(tmp_path / "dev.csv", "text,label\nfine,1\n")
    no_loading(monkeypatch)
    capsys.readouterr()
    code = main(["train", "--task", "mine", "--train-file", str(tmp_path / "train.csv"), "--dev-file",
                 str(tmp_path / "dev.csv"), "--model", str(tiny_model), "--quiet", *extra, "--out", str(run)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "already holds a run (result.json)" in err, err


def test_the_default_folder_is_checked_too(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "runs" / "train" / "sst2-baseline" / "model" / "privnlu.json", "{}")
    no_loading(monkeypatch)
    capsys.readouterr()
    assert main(["train", "--task", "sst2", "--quiet"]) == 2
    assert "runs/train/sst2-baseline already holds a run (model)" in capsys.readouterr().err
