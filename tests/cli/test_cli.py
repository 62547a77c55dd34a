"""The command line: every user error is one line, exit code 2, no traceback, no half-written output."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import toy_glue_dir, without_release_notice, write
from privnlu.cli.main import main
from privnlu.mechanisms.release import KeyRecord, SharedPayload


def run_cli(capsys, *argv):
    code = main(list(argv))
    return code, without_release_notice(capsys.readouterr().err)


@pytest.fixture()
def toy_glue(tmp_path):
    return toy_glue_dir(tmp_path, 40)  # 40 train rows: the encode test counts 2 x 40 encodings


def base_args(tiny_model, toy_glue, cache_dir):
    return ["--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(cache_dir), "--quiet"]


@pytest.mark.parametrize("extra,match", [
    (["--scheme", "texthide", "--k", "0"], "--k: '0' is out of range: integer >= 1"),
    (["--scheme", "texthide", "--k", "64", "--batch-size", "8"], "larger than the batch"),
    (["--lr", "0"], "--lr: '0' is out of range"),
    (["--lr", "-0.1"], "--lr: '-0.1' is out of range"),
])
def test_train_bad_parameters(capsys, tmp_path, tiny_model, toy_glue, cache_dir, extra, match):
    out = tmp_path / "run"
    code, err = run_cli(capsys, "train", *base_args(tiny_model, toy_glue, cache_dir), "--out", str(out), *extra)
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1
    assert not (out / "result.json").exists()


def test_argparse_errors_are_one_line(capsys):
    code = main(["train", "--task", "sst2", "--m", "-3", "--scheme", "texthide"])
    err = capsys.readouterr().err
    assert code == 2 and "m must be a non-negative integer" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("setup,match", [
    ("unknown_task", "unknown task"),
    ("missing_file", "not found"),
    ("malformed", "malformed row"),
    ("latin1", "not UTF-8"),
    ("empty_text", "empty text"),
    ("bad_label", "not one of the task's labels"),
    ("not_a_model", "not a model folder"),
    ("corrupt_cache", "corrupt"),
])
def test_bad_input_exit_2(capsys, tmp_path, tiny_model, toy_glue, cache_dir, setup, match):
    args = base_args(tiny_model, toy_glue, cache_dir)
    train = toy_glue / "SST-2" / "train.tsv"
    if setup == "unknown_task":
        args[1] = "nosuchtask"
    elif setup == "missing_file":
        train.unlink()
    elif setup == "malformed":
        write(train, "sentence\tlabel\nno label column here\n")
    elif setup == "latin1":
        write(train, "sentence\tlabel\ncaf\xe9\t1\n", "latin-1")
    elif setup == "empty_text":
        write(train, "sentence\tlabel\n \t1\n")
    elif setup == "bad_label":
        write(train, "sentence\tlabel\nfine\t3\n")
    elif setup == "not_a_model":
        args[5] = str(tmp_path)
    elif setup == "corrupt_cache":
        assert run_cli(capsys, "train", *args, "--epochs", "1", "--out", str(tmp_path / "ok"))[0] == 0
        for f in Path(cache_dir).rglob("*.pt"):
            f.write_bytes(b"\x00garbage")
    out = tmp_path / "run"
    code, err = run_cli(capsys, "train", *args, "--out", str(out))
    assert code == 2, err
    assert match in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (out / "result.json").exists()


def test_console_script_has_no_traceback(tmp_path):
    exe = Path(sys.executable).parent / "privnlu"
    proc = subprocess.run([str(exe), "train", "--task", "nope"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().startswith("privnlu: error: unknown task")
    assert "Traceback" not in proc.stderr


def test_a_closed_output_pipe_ends_quietly(tmp_path):
    """`privnlu report ... --markdown | head -1`: the reader has gone, so the command stops without a traceback."""
    rec = {"kind": "attack", "attack": "search", "task": "toy", "n_queries": 1, "corpus": "toy/dev", "corpus_size": 1,
           "threat_model": {"name": "similarity-search", "grants": []},
           "conditions": {"baseline": {"m": "0", "k": 1, "metrics": {"identity": 100.0}}}}
    (tmp_path / "r.json").write_text(json.dumps(rec))
    code = ("import os, sys; r, w = os.pipe(); os.close(r); sys.stdout = os.fdopen(w, 'w'); "
            "from privnlu.cli.main import main; sys.exit(main(['report', sys.argv[1], '--markdown']))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 141 and proc.stderr == ""


def test_train_sweep_report_and_resume(capsys, tmp_path, tiny_model, toy_glue, cache_dir):
    args = base_args(tiny_model, toy_glue, cache_dir)
    run_dir = tmp_path / "run"
    code, err = run_cli(capsys, "train", *args, "--scheme", "texthide", "--m", "4", "--k", "2", "--epochs", "2",
                        "--batch-size", "8", "--seed", "3", "--out", str(run_dir))
    assert code == 0 and "EXPERIMENTS ONLY" in err.upper()
    rec = json.loads((run_dir / "result.json").read_text())
    assert rec["variant"] == "texthide-intra" and rec["m"] == "4" and len(rec["history"]) == 2
    assert stat.S_IMODE(os.stat(run_dir / "key.pt").st_mode) == 0o600
    key_bytes = (run_dir / "key.pt").read_bytes()
    assert key_bytes[:2] not in json.dumps(rec).encode() or "masks" not in json.dumps(rec)
    code, err = run_cli(capsys, "train", *args, "--scheme", "texthide", "--m", "4", "--k", "2", "--epochs", "1",
                        "--batch-size", "8", "--out", str(run_dir))  # another run into the same folder: refused
    assert code == 2 and "--force" in err and (run_dir / "key.pt").read_bytes() == key_bytes
    assert json.loads((run_dir / "result.json").read_text())["history"] == rec["history"]
    sweep_dir = tmp_path / "sweep"
    code, _ = run_cli(capsys, "sweep", *args, "--ms", "0,4", "--ks", "1,2", "--epochs", "1", "--batch-size", "8", "--out", str(sweep_dir))
    assert code == 0 and len(list(sweep_dir.glob("m*-k*.json"))) == 4
    stamp = (sweep_dir / "m4-k2.json").stat().st_mtime_ns
    assert run_cli(capsys, "sweep", *args, "--ms", "0,4", "--ks", "1,2", "--epochs", "1", "--batch-size", "8", "--out", str(sweep_dir))[0] == 0
    assert (sweep_dir / "m4-k2.json").stat().st_mtime_ns == stamp  # finished points are skipped (resume)
    code, err = run_cli(capsys, "sweep", *args, "--ms", "0,4", "--ks", "1,2", "--epochs", "2", "--batch-size", "8", "--out", str(sweep_dir))
    assert code == 2 and "train.epochs 1 -> 2" in err and len(err.strip().splitlines()) == 1  # stale points: refused
    assert (sweep_dir / "m4-k2.json").stat().st_mtime_ns == stamp
    assert main(["report", str(sweep_dir), "--markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| k=2 |" in markdown and "m=4" in markdown
    code, err = run_cli(capsys, "report", str(run_dir), str(sweep_dir), "--out", str(tmp_path / "report"))
    page = (tmp_path / "report" / "index.html").read_text()
    assert code == 0 and "metric against m and k" in page and (tmp_path / "report" / "sweep_sst2_frozen.png").exists()


def test_encode_writes_payload_and_private_key(capsys, tmp_path, tiny_model, toy_glue, cache_dir):
    args = base_args(tiny_model, toy_glue, cache_dir)
    out, key = tmp_path / "enc.safetensors", tmp_path / "key.pt"
    code, _ = run_cli(capsys, "encode", *args, "--m", "8", "--k", "3", "--encodings-per-example", "2", "--batch-size", "10",
                      "--out", str(out), "--key-out", str(key))
    assert code == 0
    payload = SharedPayload.load(out)
    assert payload.x.shape[0] == 80 and payload.y.shape == (80, 2)
    from safetensors import safe_open

    with safe_open(str(out), framework="pt") as f:  # tensors and JSON metadata, no pickle
        assert set(f.keys()) == {"x", "y"} and "privnlu_meta" in f.metadata()
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    rec = KeyRecord.load(key)
    assert rec.pool.shape[0] == 8 and rec.partners.shape == (80, 3)
    same = tmp_path / "same.safetensors"
    code, err = run_cli(capsys, "encode", *args, "--out", str(same), "--key-out", str(same))
    assert code == 2 and "different files" in err
    code, err = run_cli(capsys, "encode", *args, "--out", str(out), "--key-out", str(tmp_path / "key2.pt"))
    assert code == 2 and "refusing to replace an earlier result" in err and not (tmp_path / "key2.pt").exists()


def test_report_errors(capsys, tmp_path):
    code, err = run_cli(capsys, "report", str(tmp_path / "nothing"))
    assert code == 2 and "no such results" in err
    write(tmp_path / "bad.json", "{not json")
    code, err = run_cli(capsys, "report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "r"))
    assert code == 2 and "not a valid results JSON" in err


def test_train_on_users_own_files(capsys, tmp_path, tiny_model, cache_dir):
    rows = [f'"{"great, lovely" if i % 2 else "awful"} film {i}",{"pos" if i % 2 else "neg"}\n' for i in range(24)]
    train = write(tmp_path / "train.csv", "review,sentiment\n" + "".join(rows))
    dev = write(tmp_path / "dev.csv", "review,sentiment\n" + "".join(rows[:8]))
    args = ["--task", "myreviews", "--train-file", str(train), "--dev-file", str(dev), "--text-col", "review",
            "--label-col", "sentiment", "--model", str(tiny_model), "--cache-dir", str(cache_dir), "--quiet", "--epochs", "1"]
    code, err = run_cli(capsys, "train", *args, "--out", str(tmp_path / "run"))
    assert code == 0, err
    rec = json.loads((tmp_path / "run" / "result.json").read_text())
    assert rec["task"] == "myreviews" and rec["n_train"] == 24
    write(dev, "review,sentiment\nmeh,neutral\n")
    code, err = run_cli(capsys, "train", *args, "--out", str(tmp_path / "run2"))
    assert code == 2 and "not one of the task's labels" in err


# -- what long commands say, and where they write --------------------------------------------------------------

def test_dp_account_prints_a_table_and_the_json_on_request(capsys):
    assert main(["dp", "account", "--dp-epsilon", "8", "--k", "4", "--encodings-per-example", "50"]) == 0
    table = capsys.readouterr().out
    assert "accounted epsilon" in table and "noise multiplier" in table and "{" not in table
    assert main(["dp", "account", "--dp-epsilon", "8", "--k", "4", "--encodings-per-example", "50", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["participations"] == 200 and rec["valid_dp_guarantee"] is True


def test_report_default_folder_is_derived_from_the_inputs(capsys, tmp_path, monkeypatch):
    from privnlu.cli.report import default_out

    assert default_out(["results/qu2021/figure4"]) == str(Path("runs/report/qu2021-figure4"))
    assert default_out(["runs/dchi_train", "runs/pt"]) == str(Path("runs/report/dchi_train+pt"))
    assert default_out(["runs/"]) == str(Path("runs/report/all"))
    assert default_out(["geometry.json", "examples.json"]) == str(Path("runs/report/geometry+examples"))
    monkeypatch.chdir(tmp_path)
    rec = {"kind": "dchi", "analysis": "inversion", "task": "sst2", "dim": 32, "tokens": 10,
           "rows": [{"eta": 50, "accuracy": 0.1, "paper": 0.0154}]}
    for name in ("a", "b"):
        write(tmp_path / name / "inv.json", json.dumps(rec))
        assert main(["report", name]) == 0
    assert (tmp_path / "runs/report/a/index.html").is_file() and (tmp_path / "runs/report/b/index.html").is_file()


def test_gradient_sweep_and_wire_have_distinct_default_outputs(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "runs/attacks/gradient_matching.json", "{}")  # a finished Table 2 sweep
    code, err = run_cli(capsys, "attack", "gradient", "--trials", "1")
    assert code == 2 and "gradient_matching.json exists" in err
    code, err = run_cli(capsys, "attack", "gradient", "--wire", str(tmp_path / "fed/wire.safetensors"))
    assert "gradient_matching.json" not in err  # refused for the capture it cannot read, not for the sweep's file


def test_attack_search_refuses_a_regression_task_before_encoding(capsys, tmp_path):
    out = tmp_path / "s.json"
    code, err = run_cli(capsys, "attack", "search", "--task", "stsb", "--data-dir", str(tmp_path / "none"),
                        "--out", str(out))
    assert code == 2 and "regression task" in err and not out.exists()  # no data were looked for


def test_dchi_analyze_prints_what_it_found(capsys, tmp_path, tiny_model):
    out = tmp_path / "den.json"
    assert main(["dchi", "analyze", "deniability", "--model", str(tiny_model), "--draws", "5", "--seed", "0",
                 "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert "sample of 2000 regular tokens" in cap.err and json.loads(out.read_text())["words"] == 2000
    assert "N_w" in cap.out and "S_w" in cap.out
    toy = toy_glue_dir(tmp_path, 10)
    out = tmp_path / "inv.json"
    assert main(["dchi", "analyze", "inversion", "--model", str(tiny_model), "--data-dir", str(toy), "--etas",
                 "50,1000", "--seed", "0", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("eta 1000: nearest-neighbour inversion recovers")
