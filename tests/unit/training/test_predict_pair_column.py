"""``privnlu predict --input rows.jsonl --text-pair-col COL``: a row without the pair column is one line naming the
row and the column, before any model is loaded."""

from __future__ import annotations

import json

import pytest

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.model_folder.predict import read_inputs


def rows_file(tmp_path):
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [{"text": "a", "label": "x"}, {"text": "b"},
                                                          {"text": "c", "label": None}]))
    return f


def test_a_row_without_the_pair_column_names_the_row_and_the_column(tmp_path):
    with pytest.raises(PrivnluError, match=r"rows.jsonl: row 2 has no column 'label'$"):
        read_inputs(None, None, str(rows_file(tmp_path)), text_pair_col="label")


def test_every_row_with_the_column_reads(tmp_path):
    f = tmp_path / "ok.jsonl"
    f.write_text('{"text": "a", "label": "x"}\n{"text": "c", "label": null}\n')
    assert read_inputs(None, None, str(f), text_pair_col="label") == (["a", "c"], ["x", ""])


def test_predict_refuses_it_in_one_line(tmp_path, capsys):
    capsys.readouterr()
    code = main(["predict", "--run", str(tmp_path / "run"), "--input", str(rows_file(tmp_path)), "--text-pair-col",
                 "label"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "row 2" in err and "'label'" in err
