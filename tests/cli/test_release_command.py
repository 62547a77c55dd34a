"""``privnlu release --scheme X``: one release command for every scheme; the older commands are aliases with a
one-line notice, and a scheme that releases no data is refused with the command that trains it."""

from __future__ import annotations

import hashlib

import pytest


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_release_writes_what_encode_writes(capsys, tmp_path, tiny_cli, toy_glue):
    from privnlu.cli.main import main

    base = ["--task", "sst2", "--data-dir", str(toy_glue), *tiny_cli, "--m", "4", "--k", "2", "--batch-size", "60",
            "--seed", "0"]
    assert main(["release", "--scheme", "texthide", *base, "--out", str(tmp_path / "a.safetensors"),
                 "--key-out", str(tmp_path / "a.pt")]) == 0
    assert "is now 'privnlu release" not in capsys.readouterr().err
    assert main(["encode", "--scheme", "texthide", *base, "--out", str(tmp_path / "b.safetensors"),
                 "--key-out", str(tmp_path / "b.pt")]) == 0
    err = capsys.readouterr().err
    assert err.count("'privnlu encode' is now 'privnlu release --scheme texthide'") == 1
    assert _digest(tmp_path / "a.safetensors") == _digest(tmp_path / "b.safetensors")


def test_release_privatizes_a_text_file_as_dchi_privatize_does(capsys, tmp_path, tiny_model):
    from privnlu.cli.main import main

    src = tmp_path / "in.txt"
    src.write_text("a fine film\nthe worst day\n")
    opts = [str(src), "--eta", "50", "--model", str(tiny_model), "--seed", "0", "--quiet"]
    assert main(["release", "--scheme", "dchi-text", *opts, "--out", str(tmp_path / "a.txt")]) == 0
    assert main(["dchi", "privatize", "--scheme", "dchi-text", *opts, "--out", str(tmp_path / "b.txt")]) == 0
    assert "'privnlu dchi privatize' is now" in capsys.readouterr().err
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text() != ""


@pytest.mark.parametrize("argv, says", [
    (["release", "--scheme", "dp-sgd", "--task", "tweets"], "privnlu train --scheme dp-sgd"),
    (["release", "--scheme", "nosuch", "--task", "tweets"], "unknown scheme 'nosuch'"),
    (["release", "--task", "tweets"], "--scheme"),
])
def test_release_refuses_in_one_line_before_any_work(argv, says, capsys, tmp_path, monkeypatch):
    from privnlu.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_every_scheme_has_a_release_form_and_the_help_names_it(capsys, monkeypatch):
    from privnlu.cli.main import RELEASES, main
    from privnlu.cli.release import ALIASES, release_path
    from privnlu.schemes import SCHEMES

    assert set(RELEASES) == {"release", *ALIASES}  # the entry point knows every older name without importing
    forms = {}
    for name in SCHEMES:
        try:
            forms[name] = release_path(name)
        except Exception as exc:  # noqa: BLE001 (the refusal is the form of a model-only scheme)
            forms[name] = type(exc).__name__
    assert forms["texthide"] == forms["dp-ie"] == forms["none"] == "encode"
    assert forms["dchi-text"] == forms["dchi-token"] == "dchi privatize" and forms["dp-sgd"] == "PrivnluError"
    monkeypatch.setenv("COLUMNS", "1000")  # one line per paragraph: no name split at a hyphen
    assert main(["release", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(f" {name}: " in out for name in SCHEMES)
