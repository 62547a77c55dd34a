"""`privnlu predict` on a model folder received from someone else: it runs none of the folder's code, never
contacts the model hub, refuses broken weights and a malformed ``privnlu.json`` in one line, and always writes
valid JSON."""

from __future__ import annotations

import json
import shutil
import socket

import pytest
import torch

from conftest import write
from privnlu.cli.main import main
from privnlu.errors import PrivnluError


@pytest.fixture(scope="module")
def runs(joint_and_frozen_runs):
    return joint_and_frozen_runs


def refused(capsys, folder, *extra, match: str) -> str:
    """``privnlu predict`` on ``folder``: exit 2, one line on stderr containing ``match``, nothing on stdout."""
    code = main(["predict", "--run", str(folder), "--text", "a fine good film", *extra])
    cap = capsys.readouterr()
    assert code == 2 and match in cap.err and len(cap.err.strip().splitlines()) == 1, cap.err
    assert cap.out == ""
    return cap.err


EVIL = "from pathlib import Path\nPath({marker!r}).write_text('ran')\n"


@pytest.mark.parametrize("where", ["encoder/config.json", "encoder/tokenizer_config.json", "config.json"])
def test_a_folder_naming_custom_code_is_refused_and_its_code_never_runs(runs, tmp_path, capsys, where):
    folder = shutil.copytree(runs / "joint" / "model", tmp_path / "received")
    marker = tmp_path / "MARKER"
    for sub in ("", "encoder/"):
        write(folder / f"{sub}evil.py", EVIL.format(marker=str(marker)))
    cfg_file = folder / where
    cfg = json.loads(cfg_file.read_text())
    cfg["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel",
                       "AutoTokenizer": ["evil.EvilTokenizer", None]}
    cfg_file.write_text(json.dumps(cfg))
    refused(capsys, folder, match="auto_map")
    assert not marker.exists()


def test_a_base_encoder_naming_custom_code_is_refused(runs, tiny_model, tmp_path, capsys):
    base = shutil.copytree(tiny_model, tmp_path / "base")
    cfg = json.loads((base / "config.json").read_text())
    (base / "config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoModel": "evil.EvilModel"}}))
    marker = tmp_path / "MARKER"
    write(base / "evil.py", EVIL.format(marker=str(marker)))
    refused(capsys, runs / "frozen" / "model", "--model", str(base), match="auto_map")
    assert not marker.exists()


def test_a_hub_repository_named_by_the_folder_is_never_contacted(runs, tmp_path, monkeypatch):
    import huggingface_hub.constants as hub

    from privnlu.model_folder.predict import load

    folder = shutil.copytree(runs / "frozen" / "model", tmp_path / "received")
    pipe = json.loads((folder / "privnlu.json").read_text())
    pipe["encoder"].update(source="hub", name="some-org/some-model")
    (folder / "privnlu.json").write_text(json.dumps(pipe))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", False)  # an online user
    calls = []

    def no_network(self, address, *a, **k):
        calls.append(address)
        raise OSError("network use in a test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(PrivnluError, match="some-org/some-model"):
        load(folder)
    assert calls == [] and hub.HF_HUB_OFFLINE is False  # offline only within the load


def test_nan_weights_are_refused_at_load(runs, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    folder = shutil.copytree(runs / "frozen" / "model", tmp_path / "received")
    f = folder / "head" / "model.safetensors"
    state = load_file(str(f))
    name = next(iter(state))
    state[name][0] = float("nan")
    save_file(state, str(f))
    refused(capsys, folder, "--quiet", match="NaN")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_one_line(runs, capsys):
    refused(capsys, runs / "frozen", "--device", "cuda", match="no CUDA device")


@pytest.mark.parametrize("case,field", [
    ("no-privacy", "privacy"), ("no-task", "task"), ("k-four", "privacy.k"), ("no-labels", "task.labels"),
    ("empty-labels", "task"), ("bad-pooling", "encoder.pooling"),
])
def test_a_malformed_privnlu_json_is_refused_naming_file_and_field(runs, tmp_path, capsys, case, field):
    folder = shutil.copytree(runs / "frozen" / "model", tmp_path / "received")
    pipe = json.loads((folder / "privnlu.json").read_text())
    if case == "no-privacy":
        del pipe["privacy"]
    elif case == "no-task":
        del pipe["task"]
    elif case == "k-four":
        pipe["privacy"]["k"] = "four"
    elif case == "no-labels":
        del pipe["task"]["labels"]
    elif case == "empty-labels":
        pipe["task"]["labels"] = []
    else:
        pipe["encoder"]["pooling"] = "max"
    (folder / "privnlu.json").write_text(json.dumps(pipe))
    err = refused(capsys, folder, match="privnlu.json")
    assert f"field '{field}'" in err


def test_extra_fields_in_an_input_csv_are_an_error(runs, tmp_path, capsys):
    inp = write(tmp_path / "in.csv", "id,text\n1,a fine film\n2,a bad, dull film\n")
    out = tmp_path / "pred.csv"
    code = main(["predict", "--run", str(runs / "frozen"), "--input", str(inp), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "row 2 has more fields than the header" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_json_output_is_always_valid():
    from privnlu.model_folder.predict import format_rows

    assert json.loads(format_rows([{"text": "a", "probability": 0.5}], ".jsonl")) == {"text": "a", "probability": 0.5}
    with pytest.raises(PrivnluError, match="NaN"):
        format_rows([{"text": "a", "probability": float("nan")}], ".jsonl")
