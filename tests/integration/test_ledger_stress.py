"""The privacy ledger under 30 concurrent writers against one budget, some killed with SIGKILL at random moments.

Thirty processes release the same dataset into one ledger whose budget fits :data:`CAPACITY` releases; each makes
up to :data:`ATTEMPTS` releases as ``privnlu`` does (``begin`` before any work, the output staged, its fingerprint
noted, moved into place, ``commit``), with short pauses between the steps. A seeded RNG picks :data:`VICTIMS`
writers and the moment each is killed (SIGKILL: no cleanup runs). What held:

* the ledger file is readable and valid (schema, every value, SQLite's integrity check) after every kill, while the
  other writers go on, and at the end;
* no release over the budget: the releases recorded (pending and committed) never exceed the budget, and a writer
  is refused only once the budget is full;
* no lost release: every release a writer began is in the ledger (pending or committed) until settled, every one
  it reported committed is committed, and after the killed writers' pending releases are settled with
  ``--resolve`` every output in place has exactly one committed release and every committed release its output.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from privnlu.errors import PrivnluError
from privnlu.schemes.ledger import Ledger, Release, example_hash

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="forks worker processes and sends SIGKILL")
FORK = multiprocessing.get_context("fork")
WRITERS, ATTEMPTS, VICTIMS = 30, 3, 10
ETA, CAPACITY = 10.0, 60  # budget eta = ETA * CAPACITY: d_chi releases of one dataset compose additively
SEED = 20240601
#: the test's wall-clock bound: the writers' own pauses add up to about a second each
DEADLINE = 60.0
HASHES = [example_hash(f"text {i}", None, None) for i in range(40)]


def _writer(i: int, ledger: str, outdir: str, start, pauses: list[float]) -> None:
    """Up to ATTEMPTS releases of the dataset, as privnlu makes them; each step logged (line-buffered) to
    ``w{i}.log``: ``begun J ID``, ``committed J ID`` or ``refused J``."""
    log = open(Path(outdir) / f"w{i}.log", "w", buffering=1)
    start.wait(timeout=30)
    book = Ledger.open(ledger)
    pause = iter(pauses)
    for j in range(ATTEMPTS):
        out = Path(outdir) / f"w{i}-{j}.txt"
        rel = Release("stress", "texts", "metric-dp", "dchi-text", eta=ETA, meaning=f"writer {i}, release {j}",
                      output=str(out))
        try:
            pending = book.begin(rel, HASHES)
        except PrivnluError as exc:
            log.write(f"refused {j} {' '.join(str(exc).split())}\n")
            break
        log.write(f"begun {j} {pending.id}\n")
        time.sleep(next(pause))
        staged = out.with_name(out.name + ".staged")
        staged.write_text(f"the private texts of writer {i}, release {j}\n")
        pending.note(staged)
        time.sleep(next(pause))
        os.replace(staged, out)
        time.sleep(next(pause))
        pending.commit()
        log.write(f"committed {j} {pending.id}\n")
    log.close()
    os._exit(0)


def _snapshot(ledger: Path) -> list[dict]:
    """The ledger's releases, validated as any reader validates them (schema, values, integrity check)."""
    data = Ledger.open(ledger).data
    total = sum(r["eta"] for r in data["releases"])
    assert total <= ETA * CAPACITY * (1 + 1e-9), f"releases over the budget: eta {total}"
    assert len({r["id"] for r in data["releases"]}) == len(data["releases"])
    return data["releases"]


def _logs(outdir: Path) -> dict[int, list[list[str]]]:
    return {i: [line.split() for line in (outdir / f"w{i}.log").read_text().splitlines()]
            for i in range(WRITERS) if (outdir / f"w{i}.log").exists()}


def test_thirty_writers_with_random_kills_keep_the_ledger_valid_within_budget_and_lose_no_release(tmp_path):
    t0 = time.monotonic()
    ledger, outdir = tmp_path / "ledger.db", tmp_path / "out"
    outdir.mkdir()
    Ledger(ledger, {}).set_budget(epsilon=None, delta=None, eta=ETA * CAPACITY)
    rng = random.Random(SEED)
    victims = rng.sample(range(WRITERS), VICTIMS)
    kill_at = sorted((rng.uniform(0.02, 1.0), v) for v in victims)
    start = FORK.Event()
    procs = [FORK.Process(target=_writer, args=(i, str(ledger), str(outdir), start,
                                                [rng.uniform(0.0, 0.06) for _ in range(3 * ATTEMPTS)]))
             for i in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    began = time.monotonic()
    killed = set()
    for at, v in kill_at:
        time.sleep(max(0.0, began + at - time.monotonic()))
        if procs[v].is_alive():
            os.kill(procs[v].pid, signal.SIGKILL)
            procs[v].join(timeout=10)
            killed.add(v)
            _snapshot(ledger)  # readable and within budget right after the kill, while the others write
    for p in procs:
        p.join(timeout=max(1.0, DEADLINE - (time.monotonic() - t0)))
    assert not any(p.is_alive() for p in procs), "a writer hangs"
    assert all(p.exitcode == 0 for i, p in enumerate(procs) if i not in killed), [p.exitcode for p in procs]
    assert killed, "no writer was killed while running: the kill moments come too late"

    logs = _logs(outdir)
    before = _snapshot(ledger)
    by_id = {r["id"]: r for r in before}
    begun = {int(s[2]) for lines in logs.values() for s in lines if s[0] == "begun"}
    committed = {int(s[2]) for lines in logs.values() for s in lines if s[0] == "committed"}
    refused = [i for i, lines in logs.items() if any(s[0] == "refused" for s in lines)]
    assert begun <= set(by_id), "a release a writer began is missing from the ledger"
    assert all(by_id[r]["status"] == "committed" for r in committed), "a committed release is not committed"
    assert set(by_id) <= begun | {r["id"] for r in before if r["status"] == "pending"}
    if refused:  # a writer is refused only once the recorded releases fill the budget
        assert len(before) == CAPACITY, (len(before), refused)
    assert all(i in killed or len(logs[i]) >= 1 for i in range(WRITERS))

    for r in [r for r in before if r["status"] == "pending"]:  # the killed writers' releases, settled
        assert Ledger.open(ledger).resolve(r["id"]) in ("committed", "dropped")
    after = _snapshot(ledger)
    assert all(r["status"] == "committed" for r in after)
    outputs = sorted(p.name for p in outdir.glob("w*-*.txt"))
    recorded = sorted(r["output"].removeprefix("out/") for r in after)
    assert outputs == recorded, "an output without its release, or a release without its output"
    assert committed <= {r["id"] for r in after}
    con = sqlite3.connect(ledger)
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    con.close()
    assert not [p.name for p in tmp_path.glob(".ledger.db.*")], "a temporary ledger file was left behind"
    assert time.monotonic() - t0 < DEADLINE
