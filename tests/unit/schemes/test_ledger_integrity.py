"""A corrupt or malformed privacy ledger is refused in one line before any output (privnlu.schemes.ledger_store):
SQLite's integrity check before every read and release, noise multipliers the accountants cannot take, a JSON
ledger without its list of releases."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.schemes import create
from privnlu.schemes.ledger import Ledger, example_hash, release_of
from conftest import without_release_notice


def hashes(n: int) -> list[str]:
    return [example_hash(f"text {i}", None, i % 2) for i in range(n)]


def dchi_ledger(path: Path) -> None:
    """A ledger with one committed d_chi release of three examples."""
    Ledger.open(path).record(release_of(create("dchi-text", eta=10.0), "privatize", "t.txt", "o", model="tiny"),
                             hashes(3))


def damage_index_page(path: Path) -> None:
    """Overwrite 50 bytes of page 3 (the meta table's automatic index): plain reads do not notice."""
    con = sqlite3.connect(path)
    (page_size,) = con.execute("PRAGMA page_size").fetchone()
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_meta_1'").fetchone()
    con.close()
    data = bytearray(path.read_bytes())
    off = (root - 1) * page_size + 8
    data[off:off + 50] = bytes((37 * i + 11) % 256 for i in range(50))
    path.write_bytes(bytes(data))


def refused(capsys, argv: list[str], *words: str) -> str:
    capsys.readouterr()
    code = main(argv)
    err = without_release_notice(capsys.readouterr().err).strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err
    return err


def test_a_corrupt_ledger_is_refused_by_every_read(capsys, tmp_path):
    path = tmp_path / "corrupt.db"
    dchi_ledger(path)
    damage_index_page(path)
    before = path.read_bytes()
    for argv in (["ledger", str(path)], ["dp", "account", "--ledger", str(path)],
                 ["dp", "account", "--ledger", str(path), "--budget-eta", "50"]):
        refused(capsys, argv, str(path), "corrupt")
    with pytest.raises(PrivnluError, match="corrupt"):
        Ledger.open(path)
    assert path.read_bytes() == before


def test_a_release_into_a_corrupt_ledger_writes_nothing(capsys, tmp_path, tiny_model):
    path = tmp_path / "corrupt.db"
    dchi_ledger(path)
    damage_index_page(path)
    src = tmp_path / "in.txt"
    src.write_text("a good film\na bad film\n")
    out = tmp_path / "o.txt"
    refused(capsys, ["dchi", "privatize", str(src), "--eta", "10", "--model", str(tiny_model), "--ledger", str(path),
                     "--out", str(out)], str(path), "corrupt")
    assert not out.exists()


@pytest.mark.parametrize("z", [1e300, 1e-300, 1e-7, 1e6])
def test_a_forged_noise_multiplier_is_refused_in_one_line(capsys, tmp_path, z):
    path = tmp_path / "ledger.db"
    dchi_ledger(path)
    events = json.dumps([{"kind": "gaussian", "noise_multiplier": z, "count": 1}])
    con = sqlite3.connect(path)
    con.execute("UPDATE releases SET guarantee = 'dp', epsilon = 1.0, delta = 1e-5, eta = NULL, events = ?",
                (events,))
    con.commit()
    con.close()
    refused(capsys, ["dp", "account", "--ledger", str(path)], str(path), "noise_multiplier")
    ledger_release = release_of(create("dchi-text", eta=10.0), "privatize", "t.txt", str(tmp_path / "o2"),
                                model="tiny")
    with pytest.raises(PrivnluError, match="noise_multiplier"):
        Ledger.open(path).begin(ledger_release, hashes(3))
    assert not (tmp_path / "o2").exists()


def test_a_json_ledger_without_its_releases_is_refused_not_emptied(capsys, tmp_path):
    path = tmp_path / "old.ledger"
    text = json.dumps({"format": "privnlu-ledger", "version": 1, "budget": None, "datasets": {}})
    path.write_text(text)
    refused(capsys, ["dp", "account", "--ledger", str(path)], str(path), "releases")
    assert path.read_text() == text and not (tmp_path / "old.ledger.bak").exists()


def test_a_sound_ledger_still_reads(capsys, tmp_path):
    path = tmp_path / "ledger.db"
    dchi_ledger(path)
    assert main(["dp", "account", "--ledger", str(path)]) == 0
    assert "eta 10" in capsys.readouterr().out
