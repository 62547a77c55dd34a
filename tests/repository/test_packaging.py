"""Packaging fits a user's environment."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_torch_is_a_range_in_the_package_and_pinned_only_in_constraints():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_req = [d for d in meta["dependencies"] if d.startswith("torch")]
    assert torch_req and "==" not in torch_req[0] and ">=" in torch_req[0]
    assert "torch==" in (ROOT / "constraints.txt").read_text()
    assert "torch==" in (ROOT / "Makefile").read_text()


def test_test_only_packages_are_not_in_all():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    flat = " ".join(extras["all"])
    for name in ("test", "extras"):
        assert f"[{name}" not in flat and f",{name}" not in flat
    assert any(d.startswith("pytest") for d in extras["test"])


def test_license_file_matches_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"]["text"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]


def test_import_does_not_switch_off_the_hub_for_the_process():
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    code = "import os, privnlu; print(os.environ.get('HF_HUB_OFFLINE'), os.environ.get('TRANSFORMERS_OFFLINE'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "None"]


def test_model_accepts_a_hub_id_only_explicitly_and_fails_in_one_line_offline(monkeypatch, tmp_path):
    import pytest

    from privnlu.errors import PrivnluError
    from privnlu.models.encoder import resolve_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert resolve_model(str(tmp_path)) == tmp_path  # an existing folder is used as it is
    assert resolve_model("/no/such/folder") == __import__("pathlib").Path("/no/such/folder")  # not a hub id
    with pytest.raises(PrivnluError, match="no such folder, and the model hub could not provide it"):
        resolve_model("someorg/no-such-model")
