"""privnlu audit under careless or hostile input: refused before any work with one line, or run to the end."""

from __future__ import annotations

import json

import pytest

WORDS = ["river", "stone", "cloud", "amber"]


def _files(tmp_path, n_train=150, n_dev=60, name="", markup=False, offset=0):
    rows = []
    for i in range(offset, offset + n_train + n_dev):
        t = f"the {WORDS[i % 4]} {'shines' if i % 2 else 'falls'} near {i}"
        rows.append((f"<p><b>{t}</b></p>" if markup and i % 3 == 0 else t, i % 2))
    train, dev = tmp_path / f"train{name}.csv", tmp_path / f"dev{name}.csv"
    train.write_text("text,label\n" + "".join(f'"{t}",{y}\n' for t, y in rows[:n_train]))
    dev.write_text("text,label\n" + "".join(f'"{t}",{y}\n' for t, y in rows[n_train:]))
    return train, dev


def _lines(err: str) -> str:
    """stderr without the seed warning every seeded run prints."""
    return "".join(line + "\n" for line in err.splitlines() if not line.startswith("WARNING: privnlu: a fixed --seed"))


def _no_work(monkeypatch):
    import privnlu.audit.run as run_mod

    monkeypatch.setattr(run_mod, "build_context", lambda *a, **k: pytest.fail("work started"))


def test_an_empty_scheme_list_is_refused(tmp_path, capsys, monkeypatch):
    import privnlu
    from privnlu.cli.main import main
    from privnlu.errors import PrivnluError

    _no_work(monkeypatch)
    assert main(["audit", "--task", "rte", "--schemes", ",", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "names nothing" in err and err.count("\n") == 1 and not (tmp_path / "a").exists()
    import privnlu.audit.run  # noqa: F401 - the package is imported, and the API entry still answers

    with pytest.raises(PrivnluError, match="names no scheme"):
        privnlu.audit("tweets", schemes=[], out=tmp_path / "b")
    with pytest.raises(PrivnluError, match="names no scheme"):  # and again: the name stays callable
        privnlu.audit("tweets", schemes=[], out=tmp_path / "b")


def test_the_same_file_as_training_and_dev_data_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from privnlu.cli.main import main

    _no_work(monkeypatch)
    train, _ = _files(tmp_path)
    assert main(["audit", "--task", "mine", "--train-file", str(train), "--dev-file", str(train), "--schemes", "none",
                 "--out", str(tmp_path / "a"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "non-members" in err and "same file" in err and err.count("\n") == 1
    assert not (tmp_path / "a").exists()


def _audit(tmp_path, tiny_model, cache_dir, train, dev, *extra):
    return ["audit", "--task", "mine", "--train-file", str(train), "--dev-file", str(dev), "--model", str(tiny_model),
            "--schemes", "none", "--private", "8", "--distractors", "60", "--aux-size", "20", "--public-size", "40",
            "--epochs", "1", "--mi-references", "2", "--cache-dir", str(cache_dir), "--out", str(tmp_path / "audit"),
            "--seed", "0", "--quiet", "--no-report", *extra]


def test_a_small_file_with_markup_runs_to_the_end(tiny_model, cache_dir, tmp_path):
    from privnlu.cli.main import main

    train, dev = _files(tmp_path, markup=True)
    args = ["audit", "--task", "mine", "--train-file", str(train), "--dev-file", str(dev), "--model", str(tiny_model),
            "--schemes", "none,texthide", "--private", "20", "--distractors", "20", "--public-size", "100",
            "--aux-size", "50", "--epochs", "2", "--mi-references", "2", "--cache-dir", str(cache_dir), "--out",
            str(tmp_path / "audit"), "--seed", "0", "--quiet", "--no-report"]
    assert main(args) == 0
    assert len(list((tmp_path / "audit" / "points").glob("*.json"))) == 2


def test_resume_refuses_a_folder_made_on_other_data_under_the_same_task_name(tiny_model, cache_dir, tmp_path, capsys):
    from privnlu.cli.main import main

    train, dev = _files(tmp_path)
    assert main(_audit(tmp_path, tiny_model, cache_dir, train, dev)) == 0
    other_train, other_dev = _files(tmp_path, name="2", offset=1000)  # other sentences, same sizes and settings
    capsys.readouterr()
    assert main(_audit(tmp_path, tiny_model, cache_dir, other_train, other_dev, "--resume")) == 2
    err = _lines(capsys.readouterr().err)
    assert "made on other data" in err and err.count("\n") == 1
    assert main(_audit(tmp_path, tiny_model, cache_dir, train, dev, "--resume")) == 0  # its own data: kept


def test_a_hand_edited_point_is_refused_on_resume_and_by_the_report(tiny_model, cache_dir, tmp_path, capsys):
    from privnlu.cli.main import main

    train, dev = _files(tmp_path)
    assert main(_audit(tmp_path, tiny_model, cache_dir, train, dev)) == 0
    path = tmp_path / "audit" / "points" / "none.json"
    rec = json.loads(path.read_text())
    rec["utility"] = float("nan")
    path.write_text(json.dumps(rec))  # json writes NaN, as a careless editor's tool would
    capsys.readouterr()
    assert main(_audit(tmp_path, tiny_model, cache_dir, train, dev, "--resume")) == 2
    err = _lines(capsys.readouterr().err)
    assert "field 'utility' is nan, not a finite number" in err and err.count("\n") == 1
    assert main(["report", str(tmp_path / "audit" / "points"), "--out", str(tmp_path / "report")]) == 2
    assert "field 'utility'" in capsys.readouterr().err and not (tmp_path / "report").exists()
