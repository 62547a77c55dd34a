"""``privnlu predict --input`` on a long file: the file is checked in one streamed pass, then read chunk by chunk
as the predictions go out (bounded memory), with a progress bar, and the answers are the same whatever the batch
and chunk sizes, one text at a time included."""

from __future__ import annotations

import csv
import json

import pytest

from conftest import toy_glue_dir, train_once
from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.model_folder import predict_inputs
from privnlu.model_folder.predict import Predictor

LINES = 2000


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("stream")
    glue = toy_glue_dir(root, 24)
    env = (root, ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
                  str(root / "cache"), "--quiet", "--batch-size", "8", "--epochs", "1", "--scheme", "texthide",
                  "--m", "4", "--k", "2"])
    return train_once(env, "run")


@pytest.fixture(scope="module")
def lines(tmp_path_factory):
    words = ("good", "bad", "dull", "fine", "a gripping film", "awful acting", "so-so")
    path = tmp_path_factory.mktemp("lines") / "lines.txt"
    path.write_text("".join(f"{words[i % 7]} {words[(i * 3) % 7]} number {i}\n" + ("\n" if i % 97 == 0 else "")
                            for i in range(LINES)))
    return path


def _answers(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_same_answers_in_batches_of_one_and_streamed_lazily(run, lines, tmp_path, monkeypatch, capsys):
    assert main(["predict", "--run", str(run), "--input", str(lines), "--encode-batch-size", "1", "--quiet",
                 "--out", str(tmp_path / "one.jsonl")]) == 0
    one = _answers(tmp_path / "one.jsonl")
    assert len(one) == LINES and one[5]["text"] == "awful acting bad number 5"

    chunk, state, calls = 300, {"read": 0}, []  # how many rows the reader had read at each prediction call
    rows = predict_inputs._rows

    def counted(*a, **k):
        state["read"] = 0
        for row in rows(*a, **k):
            state["read"] += 1
            yield row

    predict = Predictor.predict
    monkeypatch.setattr(predict_inputs, "_rows", counted)
    monkeypatch.setattr(predict_inputs, "CHUNK", chunk)
    monkeypatch.setattr(Predictor, "predict", lambda self, texts, *a, **k: (calls.append((len(texts), state["read"])),
                                                                             predict(self, texts, *a, **k))[1])
    capsys.readouterr()
    assert main(["predict", "--run", str(run), "--input", str(lines), "--encode-batch-size", "64",
                 "--out", str(tmp_path / "many.jsonl")]) == 0
    assert "predicting" in capsys.readouterr().err  # the progress bar
    assert [n for n, _ in calls] == [chunk] * (LINES // chunk) + [LINES % chunk]
    assert all(read <= (i + 1) * chunk for i, (_, read) in enumerate(calls)), calls  # read as predicted, not first
    many = _answers(tmp_path / "many.jsonl")
    assert [a["text"] for a in many] == [a["text"] for a in one]
    assert [a["prediction"] for a in many] == [a["prediction"] for a in one]
    assert max(abs(a["probability"] - b["probability"]) for a, b in zip(many, one)) <= 1e-5


def test_csv_output_has_one_header_and_every_row(run, lines, tmp_path, monkeypatch):
    monkeypatch.setattr(predict_inputs, "CHUNK", 128)
    out = tmp_path / "p.csv"
    assert main(["predict", "--run", str(run), "--input", str(lines), "--quiet", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open(newline="")))
    assert len(rows) == LINES and list(rows[0]) == ["text", "prediction", "label_id", "probability"]


def test_a_bad_row_late_in_the_file_is_refused_before_the_model_loads(tmp_path, capsys):
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps({"text": f"t{i}"}) + "\n" for i in range(1500)) + "not json\n")
    with pytest.raises(PrivnluError, match=r"rows.jsonl:1501: malformed JSON"):
        predict_inputs.open_inputs(None, None, str(f))
    code = main(["predict", "--run", str(tmp_path / "no-such-run"), "--input", str(f)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "1501" in err


def test_chunks_of_a_file_are_its_rows_in_order(tmp_path):
    f = tmp_path / "pairs.tsv"
    f.write_text("a\tb\n" + "".join(f"x{i}\ty{i}\n" for i in range(10)))
    inputs = predict_inputs.open_inputs(None, None, str(f), text_col="a", text_pair_col="b")
    got = list(inputs.chunks(4))
    assert inputs.count == 10 and [len(t) for t, _ in got] == [4, 4, 2]
    assert sum((p for _, p in got), []) == [f"y{i}" for i in range(10)]
