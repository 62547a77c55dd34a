"""``privnlu tasks`` says where it looked for GLUE data, in the order the loaders use, and what it found there."""

from __future__ import annotations


def test_tasks_names_every_folder_it_searched_and_what_each_task_found(tmp_path, monkeypatch, capsys):
    from privnlu.cli.main import main

    (tmp_path / "glue" / "SST-2").mkdir(parents=True)
    (tmp_path / "glue" / "SST-2" / "train.tsv").write_text("sentence\tlabel\na fine film\t1\n")
    monkeypatch.setenv("PRIVNLU_DATA", str(tmp_path / "elsewhere"))
    assert main(["tasks", "--data-dir", str(tmp_path / "glue"), "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    searched = out[1:out.index(next(line for line in out if line.startswith("sst2")))]
    assert searched[0].split()[:2] == ["--data-dir", str(tmp_path / "glue")] and searched[0].endswith("(used)")
    assert searched[1].split()[:2] == ["PRIVNLU_DATA", str(tmp_path / "elsewhere")]
    assert searched[1].endswith("(no such folder)")
    rows = {line.split()[0]: line for line in out}
    assert "found (train)" in rows["sst2"] and "not found (no CoLA/*.tsv)" in rows["cola"]
    assert "packaged" in rows["tweets"]
