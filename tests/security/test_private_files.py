"""Files follow the user's umask (a report under umask 077 is 0600), and a federated run's checkpoint names no
folder of the owner's machine (privnlu.schemas.paths.shareable)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from privnlu.cli.main import main

RECORD = Path(__file__).resolve().parents[2] / "results" / "xie2022" / "dp-sgd-sst2-frozen"


@pytest.fixture()
def umask():
    old = os.umask(0o022)
    os.umask(old)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


@pytest.mark.parametrize("mask,mode", [(0o077, 0o600), (0o022, 0o644), (0o027, 0o640)])
def test_the_report_page_follows_the_umask(mask, mode, umask, tmp_path):
    umask(mask)
    record = sorted(RECORD.glob("*.json"))[0]
    assert main(["report", str(record), "--out", str(tmp_path / "report")]) == 0
    page = tmp_path / "report" / "index.html"
    assert stat.S_IMODE(page.stat().st_mode) == mode
    for f in (tmp_path / "report").iterdir():  # the figures too
        assert stat.S_IMODE(f.stat().st_mode) & ~mode == 0, f


def test_files_for_readers_take_the_umask_mode(umask):
    from privnlu.io import umask_mode

    umask(0o077)
    assert umask_mode() == 0o600 and umask_mode(executable=True) == 0o700
    umask(0o022)
    assert umask_mode() == 0o644 and umask_mode(executable=True) == 0o755


def test_a_federated_checkpoint_names_no_folder_of_this_machine(tiny_model, tmp_path):
    from federated_helpers import InProcessGrid
    from privnlu.federated import FederatedConfig
    from privnlu.federated.client import make_client_app
    from privnlu.federated.server import run_server

    data = tmp_path / "owner" / "data"
    data.mkdir(parents=True)
    cfg = FederatedConfig(task="tweets", model=str(tiny_model), clients=2, rounds=2, m="4", k=2, batch_size=8,
                          train_limit=40, dev_limit=20, cache_dir=str(tmp_path / "cache"), data_dir=str(data), seed=3,
                          checkpoint_every=1)
    out = tmp_path / "run"
    run_server(InProcessGrid(make_client_app(cfg), 2), cfg, out=out)
    text = (out / "checkpoint.json").read_text()
    assert str(tmp_path) not in text and str(Path.home()) not in text, text
    config = json.loads(text)["state"]["config"]
    assert config["data_dir"] == "../owner/data" and config["cache_dir"] == "../cache"
    more = FederatedConfig(**{**cfg.__dict__, "rounds": 3})  # the portable checkpoint still resumes
    rec = run_server(InProcessGrid(make_client_app(more), 2), more, out=out, resume=True)
    assert [h["round"] for h in rec["history"]] == [1, 2, 3]
