"""Labels and values in the user's own data files: each bad row is one line naming the file and line, exit 2,
nothing written; a typo-like rare class is a warning; ``release --scheme dchi-text --ledger`` refuses a non-UTF-8 input."""

from __future__ import annotations

from pathlib import Path

import pytest

from privnlu.cli.main import main
from privnlu.data.generic import load_table
from privnlu.errors import PrivnluError

GOOD = "".join(f"a {'good' if i % 2 else 'bad'} film number {i},{'pos' if i % 2 else 'neg'}\n" for i in range(6))


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


CASES = {
    # name: (file name, content, what the message says, the line it names)
    "jsonl-no-label-key": ("t.jsonl", '{"text": "fine", "label": "pos"}\n{"text": "dull", "label": "neg"}\n'
                           '{"text": "no label here"}\n', "no 'label' key", 3),
    "jsonl-null-label": ("t.jsonl", '{"text": "fine", "label": "pos"}\n{"text": "dull", "label": null}\n',
                         "null", 2),
    "csv-missing-label": ("t.csv", "text,label\n" + GOOD + "a film without a label\n", "1 fields where the header",
                          8),
    "csv-empty-label": ("t.csv", "text,label\n" + GOOD + "a film with an empty label,\n", "empty", 8),
    "csv-unquoted-comma": ("t.csv", "text,label\n" + GOOD + "good, but long,pos\n", "unquoted comma", 8),
    "one-class": ("t.csv", "text,label\n" + "".join(f"film {i},pos\n" for i in range(5)), "two classes", None),
    "regression-nan": ("t.csv", "text,label\nfine,0.5\ndull,nan\n", "not a finite number", 3),
    "regression-inf": ("t.jsonl", '{"text": "fine", "label": 1.5}\n{"text": "dull", "label": "inf"}\n',
                       "not a finite number", 2),
}


@pytest.mark.parametrize("command", ["train", "release", "audit"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_label_is_one_line_and_writes_nothing(tmp_path, capsys, case, command):
    if command == "audit" and case.startswith("regression"):
        pytest.skip("the audit refuses --regression before reading any file")
    name, content, says, line = CASES[case]
    data = tmp_path / "data"
    data.mkdir()
    train = write(data / name, content)
    dev = write(data / f"dev{train.suffix}", GOOD if train.suffix == ".csv" else '{"text": "ok", "label": "pos"}\n')
    out = {"train": ["--out", str(tmp_path / "run")], "audit": ["--out", str(tmp_path / "audit")],
           "release": ["--scheme", "texthide", "--out", str(tmp_path / "enc.pt"), "--key-out",
                       str(tmp_path / "key.pt")]}[command]
    before = listing(tmp_path)
    argv = [command, "--task", "mine", "--train-file", str(train), "--dev-file", str(dev), *out, "--quiet"]
    if case.startswith("regression"):
        argv.append("--regression")
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert says in err and str(train) in err
    if line is not None:
        assert f"{train}:{line}:" in err
    assert listing(tmp_path) == before


def test_no_class_is_called_none(tmp_path):
    """A null label never becomes a class named "None" (it is refused), nor does a missing CSV field."""
    path = write(tmp_path / "t.jsonl", '{"text": "fine", "label": "pos"}\n{"text": "dull", "label": null}\n')
    with pytest.raises(PrivnluError, match="null"):
        load_table(path)
    ok = load_table(write(tmp_path / "ok.csv", "text,label\n" + GOOD))
    assert ok.label_names == ("neg", "pos") and ok.labels == [0, 1, 0, 1, 0, 1]


def test_a_rare_class_is_a_warning_naming_its_row(tmp_path):
    rows = "".join(f"film {i},{'pos' if i % 2 else 'neg'}\n" for i in range(400)) + "odd film,pso\n"
    said: list[str] = []
    ds = load_table(write(tmp_path / "t.csv", "text,label\n" + rows), warn=said.append)
    assert ds.label_names == ("neg", "pos", "pso")  # training goes on with it
    assert len(said) == 1 and f"{tmp_path / 't.csv'}:402" in said[0] and "'pso'" in said[0]
    said.clear()
    load_table(write(tmp_path / "u.csv", "text,label\n" + "".join(f"film {i},{i % 3}\n" for i in range(30))),
               warn=said.append)
    assert said == []  # balanced classes: no warning
    assert load_table(tmp_path / "t.csv", split="dev", label_names=("neg", "pos", "pso"), warn=said.append)
    assert said == []  # only training data is checked


def test_a_quoted_comma_is_fine(tmp_path):
    ds = load_table(write(tmp_path / "t.csv", 'text,label\n"good, but long",pos\n' + GOOD))
    assert ds.texts_a[0] == "good, but long" and len(ds) == 7


def test_glue_regression_labels_must_be_finite(tmp_path):
    from privnlu.data.glue import GlueLayout, read_glue_split

    path = write(tmp_path / "dev.tsv", "sentence1\tsentence2\tscore\na\tb\t1.0\nc\td\tinf\n")
    with pytest.raises(PrivnluError, match=r"dev.tsv:3: .*not a finite number"):
        read_glue_split(path, GlueLayout(text_a="sentence1", text_b="sentence2", label="score"), name="stsb",
                        split="dev", label_names=())


def test_dchi_privatize_with_a_ledger_refuses_non_utf8_input(tmp_path, capsys):
    src = write(tmp_path / "in.txt", "a fine line\n".encode() + "caf\xe9 latin-1\n".encode("latin-1"))
    before = listing(tmp_path)
    code = main(["release", "--scheme", "dchi-text", str(src), "--out", str(tmp_path / "out.txt"), "--eta", "10",
                 "--ledger", str(tmp_path / "ledger.json"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "line 2 is not UTF-8" in err and str(src) in err
    assert listing(tmp_path) == before
