"""Nothing a user receives is ever unpickled: a pickle planted as an encoding payload, a wire capture or a model
head is refused in one line, and the code it carries never runs (its marker file never appears). Checkpoints are
covered in ``test_untrusted_checkpoints.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from privnlu.cli.main import main


class Plant:
    """Unpickling this creates ``marker`` (what a hostile file would do with a shell command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def plant(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"x": torch.zeros(2, 2), "payload": Plant(marker)}, path)
    return path


def refused(capsys, argv: list[str], marker: Path) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not marker.exists(), "the planted pickle ran"
    return err


def test_the_plant_is_live(tmp_path):
    """The control: unpickled, the plant does write its marker, so its absence below means it never ran."""
    marker = tmp_path / "marker"
    torch.load(plant(tmp_path / "x.pt", marker), weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("command", [["attack", "search"], ["attack", "reconstruct"]])
def test_a_pickled_payload_is_refused(tmp_path, capsys, command):
    marker = tmp_path / "marker"
    payload = plant(tmp_path / "enc.safetensors", marker)
    err = refused(capsys, [*command, "--payload", str(payload), "--out", str(tmp_path / "out.json")], marker)
    assert "pickle" in err and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("method", ["tokens", "span"])
def test_a_pickled_wire_capture_is_refused(tmp_path, capsys, method):
    marker = tmp_path / "marker"
    wire = plant(tmp_path / "run" / "wire.safetensors", marker)
    err = refused(capsys, ["attack", "gradient", "--wire", str(wire), "--method", method,
                           "--out", str(tmp_path / "out.json")], marker)
    assert "pickle" in err and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("mode, part", [("frozen", "head"), ("joint", "head"), ("joint", "encoder")])
def test_pickled_weights_in_a_received_model_folder_are_refused(tmp_path, capsys, tiny_model, joint_and_frozen_runs,
                                                                 mode, part):
    received = tmp_path / "received"
    shutil.copytree(joint_and_frozen_runs / mode / "model", received)
    weights = [p for p in received.rglob("*.safetensors") if ("encoder" in p.parts) == (part == "encoder")]
    assert weights, f"the model folder holds its {part} as safetensors"
    marker = tmp_path / "marker"
    for w in weights:
        plant(w, marker)
    refused(capsys, ["predict", "--run", str(received), "--model", str(tiny_model), "--text", "a fine film"], marker)
