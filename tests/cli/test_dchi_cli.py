"""`privnlu dchi privatize` and the DchiPrivatizer API: outputs, streaming, atomicity and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import without_release_notice, write
from privnlu.cli.main import main
from privnlu.mechanisms.dchi_text import DchiPrivatizer, load_privatized
from privnlu.rng import SecretGenerator

TEXTS = ["The movie was great", "", "an [UNK] thing happened", "privacy matters", "a", "b c d", "last line here"]


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # a usage error (argparse): one line, exit code 2
        code = exc.code
    return code, without_release_notice(capsys.readouterr().err)


@pytest.fixture()
def infile(tmp_path):
    return write(tmp_path / "in.txt", "".join(t + "\n" for t in TEXTS))


@pytest.fixture(scope="module")
def priv_text(tiny_model):
    return DchiPrivatizer.load(eta=1e7, mechanism="text", model=tiny_model, rng=SecretGenerator(0, warn=False))


def test_api_text_at_huge_eta_is_identity(priv_text):
    out = priv_text.privatize(["The movie was great", "an [UNK] thing happened", ""])
    assert out == ["the movie was great", "an [UNK] thing happened", ""]


def test_api_text_small_eta_changes_words_but_not_specials(tiny_model):
    p = DchiPrivatizer.load(eta=1.0, mechanism="text", model=tiny_model, rng=SecretGenerator(1, warn=False))
    out = p.privatize(["alpha beta gamma delta [MASK] epsilon zeta eta theta"])[0]
    assert "[MASK]" in out and out != "alpha beta gamma delta [MASK] epsilon zeta eta theta"


@pytest.mark.parametrize("mechanism,suffix", [("text", ".txt"), ("rep", ".npz"), ("sequence", ".npz")])
def test_cli_streams_every_mechanism(capsys, tmp_path, tiny_model, infile, mechanism, suffix):
    out = tmp_path / f"out{suffix}"
    scheme = {"text": "dchi-text", "rep": "dchi-token", "sequence": "dchi-sequence"}[mechanism]
    code, err = run_cli(capsys, "dchi", "privatize", str(infile), "--out", str(out), "--scheme", scheme, "--eta", "50",
                        "--model", str(tiny_model), "--chunk-lines", "3", "--seed", "4")
    assert code == 0, err
    assert "fixed --seed" in err  # the loud experiments-only warning
    if mechanism == "text":
        lines = out.read_text(encoding="utf-8").split("\n")[:-1]
        assert len(lines) == len(TEXTS) and lines[1] == "" and "[UNK]" in lines[2]
        return
    arrays = list(load_privatized(out))
    assert len(arrays) == len(TEXTS)
    if mechanism == "rep":
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(tiny_model))
        assert [a.shape[0] for a in arrays] == [len(tok(t, add_special_tokens=False)["input_ids"]) for t in TEXTS]
        assert all(a.shape[1] == 32 for a in arrays)
    else:
        assert np.stack(arrays).shape == (len(TEXTS), 32)


def test_cli_truncates_long_text_with_warning(capsys, tmp_path, tiny_model):
    src = write(tmp_path / "long.txt", "short\n" + " ".join(["word"] * 300) + "\n")
    out = tmp_path / "o.npz"
    code, err = run_cli(capsys, "dchi", "privatize", str(src), "--out", str(out), "--scheme", "dchi-token", "--eta", "50",
                        "--model", str(tiny_model), "--max-length", "16")
    assert code == 0
    assert "warning: line 2 has 300 tokens; truncated to 14" in err
    assert [a.shape[0] for a in load_privatized(out)] == [1, 14]


@pytest.mark.parametrize("argv,match", [
    (["--eta", "0"], "--eta: '0' is out of range: number in (0,"),
    (["--eta", "-3"], "--eta: '-3' is out of range"),
    (["--eta", "10", "--scheme", "word"], "unknown scheme 'word'"),
    (["--eta", "10", "--scheme", "dchi-token"], "should end in .npz"),
    (["--eta", "10", "--scheme", "texthide"], "scheme texthide takes no --eta"),
])
def test_cli_bad_arguments_one_line(capsys, tmp_path, tiny_model, infile, argv, match):
    out = tmp_path / "o.txt"
    code, err = run_cli(capsys, "dchi", "privatize", str(infile), "--out", str(out), "--model", str(tiny_model), *argv)
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("content,match", [("", "is empty"), (None, "not found")])
def test_cli_bad_input_file(capsys, tmp_path, tiny_model, content, match):
    src = tmp_path / "in.txt"
    if content is not None:
        write(src, content)
    out = tmp_path / "o.txt"
    code, err = run_cli(capsys, "dchi", "privatize", str(src), "--out", str(out), "--eta", "10", "--model", str(tiny_model))
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_cli_error_midway_leaves_no_output(capsys, tmp_path, tiny_model):
    """A bad line after the first chunk was written: exit 2, and no half-written output file."""
    src = tmp_path / "in.txt"
    src.write_bytes(b"fine line\nanother\n\xff\xfe broken\n")
    out = tmp_path / "o.txt"
    code, err = run_cli(capsys, "dchi", "privatize", str(src), "--out", str(out), "--eta", "10", "--model", str(tiny_model), "--chunk-lines", "1")
    assert code == 2 and "line 3 is not UTF-8" in err
    assert not out.exists() and not list(tmp_path.glob(".o.txt.*"))


def test_cli_blank_lines_stay_blank(capsys, tmp_path, tiny_model):
    """A file of blank lines is privatized line by line (blank stays blank), not refused."""
    src = write(tmp_path / "in.txt", "\n\n")
    out = tmp_path / "o.txt"
    code, _ = run_cli(capsys, "dchi", "privatize", str(src), "--out", str(out), "--eta", "10", "--model", str(tiny_model))
    assert code == 0 and out.read_text() == "\n\n"


def test_cli_warns_when_a_release_leaves_almost_every_token_intact(capsys, tmp_path, tiny_model, infile):
    """An eta so large that M_txt returns the text unchanged is flagged, pointing to calibrate-eta."""
    out = tmp_path / "out.txt"
    code, err = run_cli(capsys, "dchi", "privatize", str(infile), "--out", str(out), "--eta", "1e9", "--model", str(tiny_model))
    assert code == 0 and "hides almost nothing" in err and "dchi calibrate" in err
    code, err = run_cli(capsys, "dchi", "privatize", str(infile), "--out", str(tmp_path / "o2.txt"), "--eta", "0.01",
                        "--model", str(tiny_model))
    assert code == 0 and "hides almost nothing" not in err
