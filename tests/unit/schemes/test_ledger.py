"""The data owner's privacy ledger (privnlu.schemes.ledger, --ledger, `privnlu dp account --ledger`)."""

import json
import os
import sqlite3
import stat

import pytest

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.mechanisms.dp import account, calibrate
from privnlu.schemes import create
from privnlu.schemes.ledger import NO_GUARANTEE, Ledger, example_hash, fingerprint, release_of
from conftest import without_release_notice


def dump(path) -> str:
    """The ledger's whole content, as SQL text."""
    con = sqlite3.connect(path)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def releases(path) -> list[dict]:
    return Ledger.open(path).data["releases"]


def dp_release(command, name, cal, output):
    return release_of(create("dp-ie"), command, name, output, calibration=cal)


def dchi_release(command, name, scheme, eta, model, output):
    return release_of(create(scheme, eta=eta), command, name, output, model=model)


def texthide_release(command, name, m, k, output):
    return release_of(create("texthide", m=m, k=k), command, name, output)


def hashes(n, start=0):
    return [example_hash(f"text {i}", None, i % 2) for i in range(start, start + n)]


def gauss(eps, epochs=1):
    return calibrate("gaussian", epsilon=eps, delta=1e-5, clip=1.0, dim=16, k=2, epochs=epochs)


def test_ledger_composes_releases_per_example(tmp_path):
    led = Ledger.open(tmp_path / "ledger.json")
    cal = gauss(2.0)
    led.record(dp_release("dp encode", "toy/train", cal, "a"), hashes(10))
    led.record(dp_release("dp encode", "toy/train", cal, "b"), hashes(10))
    [d] = led.compose(delta=1e-5)
    twice = account(cal.mechanism, 2 * cal.participations, 1e-5)  # the same mechanism, twice as many times
    assert d["epsilon"] == pytest.approx(twice, rel=2e-2) and 2.0 < d["epsilon"] < 4.0
    assert d["releases_of_this_dataset"] == 2 and d["max_releases_per_example"] == 2 and d["guarantee"] != NO_GUARANTEE
    # a release of an overlapping subset composes for the examples it shares: worst example has three releases
    led.record(dp_release("dp encode", "toy/train[:5]", cal, "c"), hashes(5))
    worst = {x["names"][0]: x for x in led.compose(delta=1e-5)}
    assert worst["toy/train"]["epsilon"] == pytest.approx(account(cal.mechanism, 3 * cal.participations, 1e-5), rel=2e-2)
    # saved 0600, and reopened identically
    assert stat.S_IMODE(os.stat(tmp_path / "ledger.json").st_mode) == 0o600
    assert Ledger.open(tmp_path / "ledger.json").compose(delta=1e-5) == led.compose(delta=1e-5)


def test_budget_refuses_a_release_that_would_exceed_it(tmp_path):
    led = Ledger.open(tmp_path / "l.json")
    led.set_budget(epsilon=2.5, delta=1e-5, eta=None)  # two eps = 2 Gaussian releases compose to ~2.9
    first = dp_release("dp encode", "toy/train", gauss(2.0), "a")
    led.check(first, hashes(10))
    led.record(first, hashes(10))
    with pytest.raises(PrivnluError, match="refused: this release would bring .* above the budget"):
        led.check(dp_release("dp encode", "toy/train", gauss(2.0), "b"), hashes(10))
    led.check(dp_release("dp encode", "other/train", gauss(2.0), "c"), hashes(10, start=100))  # disjoint data: fits
    with pytest.raises(PrivnluError, match=NO_GUARANTEE):
        led.check(texthide_release("encode", "toy/train", "16", 4, "d"), hashes(10))
    with pytest.raises(PrivnluError, match="sets no eta"):
        led.check(dchi_release("privatize", "t.txt", "dchi-text", 10.0, "tiny", "o"), hashes(10))


def test_dchi_and_texthide_records(tmp_path):
    led = Ledger.open(tmp_path / "l.json")
    led.record(dchi_release("privatize", "t.txt", "dchi-text", 10.0, "tiny", "o1"), hashes(4))
    led.record(dchi_release("privatize", "t.txt", "dchi-token", 5.0, "tiny", "o2"), hashes(4))
    led.record(texthide_release("encode", "toy/train", "256", 4, "e"), hashes(4))
    rel = led.data["releases"]
    assert rel[0]["eta"] == 10.0 and "metric DP" in rel[0]["meaning"] and rel[0]["epsilon"] is None
    assert rel[0]["guarantee"] == "metric-dp" and rel[1]["mechanism"] == "dchi-token"
    assert rel[2]["meaning"] == NO_GUARANTEE and rel[2]["guarantee"] == "none"
    [d] = led.compose()
    assert d["eta"] == 15.0 and d["epsilon"] is None and d["guarantee"] == NO_GUARANTEE
    assert d["dataset"] == fingerprint(hashes(4))
    led.set_budget(epsilon=None, delta=None, eta=20.0)
    with pytest.raises(PrivnluError, match="eta = 25"):
        led.check(dchi_release("privatize", "t.txt", "dchi-text", 10.0, "tiny", "o3"), hashes(4))


def test_cli_ledger_end_to_end(capsys, tmp_path, tiny_model, toy_glue):
    ledger = tmp_path / "keys" / "ledger.json"
    base = ["--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(tmp_path / "c"),
            "--quiet", "--k", "2", "--batch-size", "16", "--ledger", str(ledger)]
    assert main(["dp", "account", "--ledger", str(ledger), "--budget-epsilon", "2.5"]) == 0
    out, key = tmp_path / "e1.safetensors", tmp_path / "k1.pt"
    assert main(["dp", "encode", *base, "--dp-epsilon", "2", "--out", str(out), "--key-out", str(key)]) == 0
    capsys.readouterr()
    out2, key2 = tmp_path / "e2.safetensors", tmp_path / "k2.pt"
    before = dump(ledger)
    code = main(["dp", "encode", *base, "--dp-epsilon", "2", "--out", str(out2), "--key-out", str(key2)])
    err = without_release_notice(capsys.readouterr().err).strip().splitlines()
    assert code == 2 and "refused" in err[-1] and "nothing was written" in err[-1] and len(err) == 1
    assert not out2.exists() and not key2.exists() and dump(ledger) == before
    code = main(["encode", *base, "--scheme", "texthide", "--out", str(out2), "--key-out", str(key2)])
    assert code == 2 and NO_GUARANTEE in without_release_notice(capsys.readouterr().err) and not out2.exists()
    assert main(["dp", "account", "--ledger", str(ledger), "--out", str(tmp_path / "acc.json")]) == 0
    rec = json.loads((tmp_path / "acc.json").read_text())
    [d] = rec["datasets"]
    assert rec["kind"] == "dp-ledger" and rec["budget"]["epsilon"] == 2.5 and d["names"] == ["sst2/train"]
    assert d["epsilon"] == pytest.approx(2.0, rel=2e-2) and d["n_examples"] == 60
    [r] = releases(ledger)
    assert r["command"] == "dp encode" and r["status"] == "committed" and r["output"] == "../e1.safetensors"
    assert str(tmp_path) not in dump(ledger)  # paths relative to the ledger's folder, none of this machine's
    code = main(["dp", "account", "--ledger", str(tmp_path / "none.json")])
    assert code == 2 and "no such ledger" in without_release_notice(capsys.readouterr().err)


def test_cli_privatize_records_eta(capsys, tmp_path, tiny_model):
    src = tmp_path / "in.txt"
    src.write_text("a good film\na bad film\n")
    ledger = tmp_path / "ledger.json"
    assert main(["dp", "account", "--ledger", str(ledger), "--budget-eta", "15"]) == 0
    args = ["dchi", "privatize", str(src), "--eta", "10", "--model", str(tiny_model), "--ledger", str(ledger)]
    assert main([*args, "--out", str(tmp_path / "o.txt")]) == 0
    rel = releases(ledger)
    assert len(rel) == 1 and rel[0]["eta"] == 10 and rel[0]["mechanism"] == "dchi-text" and rel[0]["n_examples"] == 2
    capsys.readouterr()
    code = main([*args, "--out", str(tmp_path / "o2.txt")])
    assert code == 2 and "eta = 20" in without_release_notice(capsys.readouterr().err) and not (tmp_path / "o2.txt").exists()


def test_dp_sgd_models_enter_the_ledger_and_compose(capsys, tmp_path, tiny_model, toy_glue):
    """A DP-SGD model is a release of its training set: its Poisson-subsampled Gaussian steps compose with the
    other releases (PLD), and a model over the owner's budget is refused before any work."""
    from privnlu.schemes.ledger import compose_events

    ledger = tmp_path / "ledger.json"
    base = ["train", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir",
            str(tmp_path / "c"), "--quiet", "--epochs", "1", "--batch-size", "8", "--scheme", "dp-sgd",
            "--ledger", str(ledger)]
    assert main(["dp", "account", "--ledger", str(ledger), "--budget-epsilon", "5", "--budget-delta", "1e-3"]) == 0
    assert main([*base, "--dp-epsilon", "4", "--out", str(tmp_path / "m1")]) == 0
    rec = json.loads((tmp_path / "m1" / "result.json").read_text())
    [release] = releases(ledger)
    assert release["command"] == "train" and release["guarantee"] == "dp" and release["events"][0]["kind"] == "poisson-gaussian"
    assert release["events"][0]["count"] == rec["dp"]["steps"]
    # the ledger's PLD accounting of the recorded steps agrees with Opacus's PRV accountant within 5 %
    assert compose_events(release["events"], rec["dp"]["delta"]) == pytest.approx(rec["dp"]["epsilon"], rel=0.05)
    capsys.readouterr()
    before = dump(ledger)
    code = main([*base, "--dp-epsilon", "4", "--out", str(tmp_path / "m2")])
    err = without_release_notice(capsys.readouterr().err).strip().splitlines()
    assert code == 2 and "refused" in err[-1] and len(err) == 1
    assert not (tmp_path / "m2").exists() and dump(ledger) == before


# --- the SQLite store: migration, validation, pending releases ------------------------------------------------


def json_ledger(tmp_path, out_path):
    """A ledger in the earlier JSON format: one d_chi release (its kind still "dchi"), an absolute output path."""
    hs = hashes(3)
    return {"format": "privnlu-ledger", "version": 1, "budget": {"epsilon": None, "delta": 1e-5, "eta": 30.0},
            "datasets": {fingerprint(hs): hs},
            "releases": [{"command": "dchi privatize", "dataset_name": "t.txt", "guarantee": "dchi",
                          "mechanism": "dchi-text", "epsilon": None, "delta": None, "events": [], "eta": 10.0,
                          "meaning": "m", "output": str(out_path), "dataset": fingerprint(hs), "n_examples": 3,
                          "time": "2026-01-02T03:04:05Z"}]}


def test_a_json_ledger_is_converted_once_with_a_backup(capsys, tmp_path):
    path = tmp_path / "keys" / "owner.ledger"  # recognised by content, not by name
    path.parent.mkdir()
    old = json.dumps(json_ledger(tmp_path, tmp_path / "out" / "o.txt"))
    path.write_text(old)
    assert main(["ledger", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "converted the JSON ledger" in err and "owner.ledger.bak" in err
    assert path.read_bytes()[:16] == b"SQLite format 3\x00" and (tmp_path / "keys" / "owner.ledger.bak").read_text() == old
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    [r] = releases(path)
    assert r["guarantee"] == "metric-dp" and r["status"] == "committed" and r["output"] == "../out/o.txt"
    assert "dchi privatize" in out and "eta 10" in out and "eta 30" in out
    assert str(tmp_path) not in dump(path)
    assert main(["ledger", str(path)]) == 0 and "converted" not in without_release_notice(capsys.readouterr().err)  # once
    led = Ledger.open(path)
    assert led.budget["eta"] == 30.0 and led.compose()[0]["eta"] == 10.0
    with pytest.raises(PrivnluError, match="eta = 40"):
        led.check(dchi_release("privatize", "t.txt", "dchi-text", 30.0, "tiny", "o"), hashes(3))


def forge(path, sql: str) -> None:
    """A ledger with one valid release, then ``sql`` applied to it directly."""
    Ledger.open(path).record(dchi_release("privatize", "t.txt", "dchi-text", 10.0, "tiny", "o"), hashes(3))
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.close()


FORGED = {
    "text": (lambda p: p.write_text("hello"), "not a privnlu ledger"),
    "empty": (lambda p: p.write_bytes(b""), "not a privnlu ledger"),
    "json without format": (lambda p: p.write_text('{"releases": []}'), "not a privnlu ledger"),
    "json eta nan": (lambda p: p.write_text(json.dumps(json_ledger(p.parent, "o")).replace("10.0", "NaN")), "eta"),
    "bad sqlite": (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200), "not a privnlu ledger"),
    "other database": (lambda p: sqlite3.connect(p).executescript("CREATE TABLE t (x)"), "unexpected table 't'"),
    "trigger": (lambda p: forge(p, "CREATE TRIGGER t AFTER INSERT ON releases BEGIN DELETE FROM budget; END"),
                "unexpected trigger"),
    "eta x": (lambda p: forge(p, "UPDATE releases SET eta = 'x'"), "release 1 eta is 'x'"),
    "eta nan": (lambda p: forge(p, "UPDATE releases SET eta = 0.0 / 0.0"), "release 1 eta is None"),
    "eta inf": (lambda p: forge(p, "UPDATE releases SET eta = 1e999"), "release 1 eta is inf"),
    "status": (lambda p: forge(p, "UPDATE releases SET status = 'maybe'"), "release 1 status"),
    "absolute output": (lambda p: forge(p, "UPDATE releases SET output = '/etc/passwd'"), "release 1 output"),
    "events": (lambda p: forge(p, "UPDATE releases SET events = '[{\"kind\": \"gaussian\", \"noise_multiplier\": -1, "
                                  "\"count\": 1}]'"), "release 1 event 1 noise_multiplier"),
    "hashes": (lambda p: forge(p, "UPDATE datasets SET hashes = 'abc'"), "hashes"),
    "budget": (lambda p: forge(p, "INSERT INTO budget VALUES (1, -2, 1e-5, NULL)"), "budget epsilon is -2"),
    "version": (lambda p: forge(p, "UPDATE meta SET value = '99' WHERE key = 'version'"), "meta version"),
}


@pytest.mark.parametrize("case", FORGED)
def test_a_forged_or_corrupt_ledger_is_refused_in_one_line(capsys, tmp_path, case):
    path = tmp_path / "ledger.db"
    make, field = FORGED[case]
    make(path)
    before = path.read_bytes()
    for argv in (["ledger", str(path)], ["dp", "account", "--ledger", str(path)]):
        code = main(argv)
        err = without_release_notice(capsys.readouterr().err).strip().splitlines()
        assert code == 2 and len(err) == 1 and str(path) in err[0] and field in err[0], err
        assert "Traceback" not in err[0]
    assert path.read_bytes() == before and not (tmp_path / "ledger.db.bak").exists()


def test_pending_releases_count_and_are_settled(capsys, tmp_path):
    path, out = tmp_path / "l.db", tmp_path / "o.txt"
    led = Ledger.open(path)
    led.set_budget(epsilon=None, delta=None, eta=25.0)
    release = dchi_release("privatize", "t.txt", "dchi-text", 10.0, "tiny", str(out))
    first = led.begin(release, hashes(4))
    assert [r["status"] for r in Ledger.open(path).data["releases"]] == ["pending"]
    led.begin(release, hashes(4))  # pending ones count: a third at eta 10 would make 30
    with pytest.raises(PrivnluError, match="eta = 30 .*2 of them pending"):
        Ledger.open(path).begin(release, hashes(4))
    with pytest.raises(PrivnluError, match="being written by process"):  # this process began them, and runs
        _resolve_as_other(path, first.id)
    # a failure before the output is in place drops the record; one after it commits it
    with pytest.raises(RuntimeError), Ledger.open(path).begin(release, hashes(2, start=100)) as p:
        raise RuntimeError("the encoder failed")
    assert p.id not in {r["id"] for r in releases(path)}
    out.write_text("privatized\n")
    first.note(out)
    assert Ledger.open(path).resolve(first.id) == "committed"  # in place with the noted fingerprint
    out.write_text("another file\n")
    second = [r for r in releases(path) if r["status"] == "pending"][0]["id"]
    assert Ledger.open(path).resolve(second) == "committed"  # none noted, differs from what was there: conservative
    assert main(["ledger", str(path), "--resolve", str(second)]) == 2
    assert "committed, not pending" in without_release_notice(capsys.readouterr().err)
    third = Ledger.open(path).begin(release, hashes(1, start=50))
    third.note(tmp_path / "missing")
    assert main(["ledger", str(path), "--resolve", str(third.id)]) == 0  # noted, but not in place: dropped
    assert f"release {third.id}: dropped" in without_release_notice(capsys.readouterr().err)
    fourth = Ledger.open(path).begin(release, hashes(1, start=60))
    assert main(["ledger", str(path), "--drop-pending", str(fourth.id), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["releases"]
    assert [r["status"] for r in listed] == ["committed", "committed"] and listed[0]["output"] == "o.txt"


def _resolve_as_other(path, rid):
    """Resolve as if another, still running process had begun release ``rid`` (this test's parent process)."""
    def writer(pid):
        con = sqlite3.connect(path)
        con.execute("UPDATE releases SET writer = ? WHERE id = ?", (pid, rid))
        con.commit()
        con.close()

    writer(os.getppid())
    try:
        return Ledger.open(path).resolve(rid)
    finally:
        writer(os.getpid())


def test_a_release_that_would_make_the_ledger_unreadable_is_not_written(tmp_path):
    from dataclasses import replace

    from privnlu.schemes.ledger import Release

    path = tmp_path / "l.db"
    bad = Release("dp encode", "toy\n\x1b[31mred", "dp", "dp-ie", epsilon=float("inf"), delta=1e-5, output="a",
                  events=[{"kind": "gaussian", "noise_multiplier": 1.0, "count": 1}])
    with pytest.raises(PrivnluError, match="cannot record this release: release 1 epsilon is inf"):
        Ledger.open(path).record(bad, hashes(2))
    assert releases(path) == []
    Ledger.open(path).record(replace(bad, epsilon=1.0), hashes(2))
    [r] = releases(path)
    assert r["dataset_name"] == "toy  [31mred"  # control characters never reach a terminal
