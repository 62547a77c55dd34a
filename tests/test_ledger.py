"""The data owner's privacy ledger (privnlu.schemes.ledger, --ledger, `privnlu dp account --ledger`)."""

import json
import os
import stat

import pytest

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.mechanisms.dp import account, calibrate
from privnlu.schemes import create
from privnlu.schemes.ledger import NO_GUARANTEE, Ledger, example_hash, fingerprint, release_of


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
    before = ledger.read_text()
    code = main(["dp", "encode", *base, "--dp-epsilon", "2", "--out", str(out2), "--key-out", str(key2)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "refused" in err[-1] and "nothing was written" in err[-1] and len(err) == 1
    assert not out2.exists() and not key2.exists() and ledger.read_text() == before
    code = main(["encode", *base, "--scheme", "texthide", "--out", str(out2), "--key-out", str(key2)])
    assert code == 2 and NO_GUARANTEE in capsys.readouterr().err and not out2.exists()
    assert main(["dp", "account", "--ledger", str(ledger), "--out", str(tmp_path / "acc.json")]) == 0
    rec = json.loads((tmp_path / "acc.json").read_text())
    [d] = rec["datasets"]
    assert rec["kind"] == "dp-ledger" and rec["budget"]["epsilon"] == 2.5 and d["names"] == ["sst2/train"]
    assert d["epsilon"] == pytest.approx(2.0, rel=2e-2) and d["n_examples"] == 60
    assert json.loads(ledger.read_text())["releases"][0]["command"] == "dp encode"
    code = main(["dp", "account", "--ledger", str(tmp_path / "none.json")])
    assert code == 2 and "no such ledger" in capsys.readouterr().err


def test_cli_privatize_records_eta(capsys, tmp_path, tiny_model):
    src = tmp_path / "in.txt"
    src.write_text("a good film\na bad film\n")
    ledger = tmp_path / "ledger.json"
    assert main(["dp", "account", "--ledger", str(ledger), "--budget-eta", "15"]) == 0
    args = ["dchi", "privatize", str(src), "--eta", "10", "--model", str(tiny_model), "--ledger", str(ledger)]
    assert main([*args, "--out", str(tmp_path / "o.txt")]) == 0
    rel = json.loads(ledger.read_text())["releases"]
    assert len(rel) == 1 and rel[0]["eta"] == 10 and rel[0]["mechanism"] == "dchi-text" and rel[0]["n_examples"] == 2
    capsys.readouterr()
    code = main([*args, "--out", str(tmp_path / "o2.txt")])
    assert code == 2 and "eta = 20" in capsys.readouterr().err and not (tmp_path / "o2.txt").exists()


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
    [release] = json.loads(ledger.read_text())["releases"]
    assert release["command"] == "train" and release["guarantee"] == "dp" and release["events"][0]["kind"] == "poisson-gaussian"
    assert release["events"][0]["count"] == rec["dp"]["steps"]
    # the ledger's PLD accounting of the recorded steps agrees with Opacus's PRV accountant within 5 %
    assert compose_events(release["events"], rec["dp"]["delta"]) == pytest.approx(rec["dp"]["epsilon"], rel=0.05)
    capsys.readouterr()
    before = ledger.read_text()
    code = main([*base, "--dp-epsilon", "4", "--out", str(tmp_path / "m2")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "refused" in err[-1] and len(err) == 1
    assert not (tmp_path / "m2").exists() and ledger.read_text() == before
