"""The ledger under concurrent releases and crashes: two releases that the budget fits only one at a time, started
together in two processes, cannot both pass; a crash between the write and the commit leaves a pending release
that counts against the budget, is listed, and is settled with ``privnlu ledger FILE --resolve ID``."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sqlite3
import sys

import pytest

from privnlu.cli.main import main
from privnlu.schemes.ledger import Ledger

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="forks worker processes")
FORK = multiprocessing.get_context("fork")


def _child(barrier, argv: list[str], err: str, crash: str | None) -> None:
    """Run ``privnlu argv`` in a forked process: stderr into ``err``; exit with its code, or with 3 at ``crash``
    (a method of the pending release: the process dies there)."""
    sys.stderr = open(err, "w")
    if crash is not None:
        from privnlu.schemes.ledger import Pending

        setattr(Pending, crash, lambda *a, **k: os._exit(3))
    if barrier is not None:
        barrier.wait(timeout=60)
    code = main(argv)
    sys.stderr.flush()
    os._exit(code)


def run_together(argvs: list[list[str]], errs: list, crash: str | None = None) -> list[int]:
    barrier = FORK.Barrier(len(argvs)) if len(argvs) > 1 else None
    procs = [FORK.Process(target=_child, args=(barrier, a, str(e), crash)) for a, e in zip(argvs, errs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    return [p.exitcode for p in procs]


@pytest.fixture(scope="module", autouse=True)
def warm():
    """Import what a release imports once, before the forks (each child would pay for it again)."""
    for module in ("privnlu.mechanisms.dchi_text", "privnlu.owner.release"):
        importlib.import_module(module)


@pytest.fixture()
def texts(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("".join(f"a short text number {i}\n" for i in range(600)))
    return src


def privatize(src, out, ledger, model, eta="100") -> list[str]:
    return ["release", "--scheme", "dchi-text", str(src), "--eta", eta, "--model", str(model), "--ledger", str(ledger), "--out",
            str(out), "--quiet"]


def test_two_concurrent_releases_cannot_both_pass_a_budget_for_one(tmp_path, texts, tiny_model, capsys):
    ledger = tmp_path / "keys" / "ledger.db"
    assert main(["dp", "account", "--ledger", str(ledger), "--budget-eta", "150"]) == 0
    outs, errs = [tmp_path / "a.txt", tmp_path / "b.txt"], [tmp_path / "a.err", tmp_path / "b.err"]
    codes = run_together([privatize(texts, o, ledger, tiny_model) for o in outs], errs)
    assert sorted(codes) == [0, 2], codes
    won, lost = (0, 1) if codes[0] == 0 else (1, 0)
    err = errs[lost].read_text().strip().splitlines()
    assert len(err) == 1 and "refused" in err[0] and "eta = 200" in err[0] and "nothing was written" in err[0]
    assert outs[won].is_file() and not outs[lost].exists()
    [r] = Ledger.open(ledger).data["releases"]
    assert r["status"] == "committed" and r["output"] == f"../{outs[won].name}" and r["eta"] == 100
    con = sqlite3.connect(ledger)
    assert str(tmp_path) not in "\n".join(con.iterdump())  # no absolute path of this machine
    con.close()
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    listing = capsys.readouterr().out
    assert outs[won].name in listing and outs[lost].name not in listing and "PENDING" not in listing


@pytest.mark.parametrize("crash, settled", [("commit", "committed"), ("note", "dropped")])
def test_a_crash_leaves_a_pending_release_that_is_listed_and_settled(tmp_path, texts, tiny_model, capsys, crash,
                                                                     settled):
    """Killed after the output is in place (at the commit): the output is there with the noted fingerprint, so the
    release is committed. Killed before (at the note): nothing is in place, so it is dropped."""
    ledger, out = tmp_path / "ledger.db", tmp_path / "o.txt"
    assert main(["dp", "account", "--ledger", str(ledger), "--budget-eta", "150"]) == 0
    assert run_together([privatize(texts, out, ledger, tiny_model)], [tmp_path / "err"], crash=crash) == [3]
    assert out.is_file() == (crash == "commit")
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    listing = capsys.readouterr().out
    assert "PENDING" in listing and "1 pending (ids 1)" in listing and "o.txt" in listing
    # it counts against the budget until settled
    assert main(privatize(texts, tmp_path / "o2.txt", ledger, tiny_model)) == 2
    assert "1 of them pending" in capsys.readouterr().err and not (tmp_path / "o2.txt").exists()
    assert main(["ledger", str(ledger), "--resolve", "1"]) == 0
    assert f"release 1: {settled}" in capsys.readouterr().err
    rel = Ledger.open(ledger).data["releases"]
    assert [r["status"] for r in rel] == (["committed"] if settled == "committed" else [])
