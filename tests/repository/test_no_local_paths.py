"""Nothing a user may share names a path of their machine: a train run's folder, a shared encoding file, an attack's
result on it, a federated run's folder and the HTML report built from them hold no absolute path (not the test's
folder, not the home folder), and a rerun still recognises its own records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import toy_glue_dir
from privnlu.cli.main import main


def leaks(root: Path, needles: list[str]) -> list[str]:
    """Files under ``root`` whose bytes contain any of ``needles`` (a resume checkpoint aside: it stays with the
    owner, like the key, and is compared on this machine only)."""
    found = []
    for f in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("checkpoint")):
        data = f.read_bytes()
        found += [f"{f.relative_to(root)}: {n}" for n in needles if n.encode() in data]
    return found


@pytest.fixture()
def work(tmp_path, tiny_model):
    """Inputs (toy SST-2, the tiny model, a cache) outside ``out``, where every output goes."""
    inputs = tmp_path / "inputs"
    glue = toy_glue_dir(inputs, 40)
    common = ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
              str(inputs / "cache"), "--quiet"]
    return tmp_path / "out", common, tiny_model


def test_train_attack_and_report_write_no_local_path(work, tmp_path, capsys):
    out, common, tiny_model = work
    run = out / "run"
    assert main(["train", *common, "--scheme", "texthide", "--m", "4", "--k", "2", "--epochs", "1",
                 "--batch-size", "8", "--seed", "1", "--out", str(run)]) == 0
    shared = out / "shared.safetensors"
    assert main(["encode", *common, "--scheme", "texthide", "--m", "4", "--k", "2", "--encodings-per-example", "2",
                 "--batch-size", "8", "--seed", "1", "--out", str(shared), "--key-out", str(out / "key.pt")]) == 0
    attack = out / "attack.json"
    assert main(["attack", "search", "--payload", str(shared), *common[2:], "--out", str(attack)]) == 0
    assert main(["report", str(run), str(attack), "--out", str(out / "report")]) == 0
    capsys.readouterr()
    assert (out / "report" / "index.html").is_file()
    assert leaks(out, [str(tmp_path), str(Path.home()), str(tiny_model.parent)]) == []
    rec = json.loads((run / "result.json").read_text())
    # the base model and data folder relative to the run folder (they share the test's folder), the encoder named
    assert rec["spec"]["data_dir"] == "../../inputs/glue" and rec["encoder"]["model"] == tiny_model.name
    assert json.loads(attack.read_text())["payload"]["name"] == "shared.safetensors"
    # the run is still usable where it lies: predict finds the base model through the relative path
    assert main(["predict", "--run", str(run), "--text", "a fine good film", "--quiet"]) == 0
    capsys.readouterr()


def test_a_rerun_recognises_its_portable_records(work, capsys):
    out, common, _ = work
    args = [*common, "--ms", "0,4", "--ks", "2", "--epochs", "1", "--batch-size", "8", "--out", str(out / "sweep")]
    assert main(["sweep", *args]) == 0
    stamp = (out / "sweep" / "m4-k2.json").stat().st_mtime_ns
    assert main(["sweep", *args]) == 0  # same settings: the finished points are kept, not refused or recomputed
    assert (out / "sweep" / "m4-k2.json").stat().st_mtime_ns == stamp
    rec = json.loads((out / "sweep" / "m4-k2.json").read_text())
    assert not rec["spec"]["model"].startswith("/") and not rec["spec"]["data_dir"].startswith("/")
    assert main(["sweep", *args, "--max-length", "64"]) == 2  # other settings: refused
    assert "max_length" in capsys.readouterr().err


def test_a_federated_run_folder_names_no_local_path(tmp_path, tiny_model, capsys):
    out = tmp_path / "out" / "fed"
    assert main(["federated", "--task", "tweets", "--model", str(tiny_model), "--clients", "2", "--m", "2", "--k",
                 "2", "--batch-size", "4", "--train-limit", "16", "--dev-limit", "8", "--rounds", "1", "--backend",
                 "inprocess", "--seed", "1", "--cache-dir", str(tmp_path / "cache"), "--record-wire", "1",
                 "--out", str(out)]) == 0
    wire = out / "wire.safetensors"
    rep = tmp_path / "out" / "leak.json"
    assert main(["attack", "gradient", "--wire", str(wire), "--truth", str(out), "--iterations", "2",
                 "--out", str(rep)]) == 0  # the run's model is found again through its relative path
    capsys.readouterr()
    assert leaks(tmp_path / "out", [str(tmp_path), str(Path.home()), str(tiny_model.parent)]) == []
    cfg = json.loads((out / "result.json").read_text())["config"]
    assert cfg["cache_dir"] == "../../cache" and json.loads(rep.read_text())["wire"]["name"] == "wire.safetensors"


def test_a_dchi_finetune_result_names_no_local_path_and_is_recognised_on_a_rerun(work, tmp_path, capsys):
    out, common, tiny_model = work
    glue, model = common[common.index("--data-dir") + 1], common[common.index("--model") + 1]
    argv = ["dchi", "finetune", "--task", "sst2", "--data-dir", glue, "--model", model, "--schemes", "dchi-token",
            "--encoders", "transformer", "--etas", "30", "--epochs", "1", "--max-length", "16", "--batch-size", "8",
            "--seed", "0", "--out", str(out / "dchi")]
    assert main(argv) == 0
    assert leaks(out, [str(tmp_path), str(Path.home()), str(tiny_model.parent)]) == []
    (result,) = (out / "dchi").glob("finetune_*.json")
    assert json.loads(result.read_text())["settings"]["data_dir"] == "../../inputs/glue"
    capsys.readouterr()
    assert main(argv) == 0 and "already have results" in capsys.readouterr().err  # same settings: recognised
