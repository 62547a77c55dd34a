"""Received DP guarantees beyond DP-SGD are recomputed from their own mechanism, never taken on trust: DP instance
encoding calibrations (privnlu.mechanisms.dp_claim) and federated DP-FedSGD and client DP-SGD blocks
(privnlu.schemes.dp_fedsgd_claim), in ``privnlu report``, when a payload is read and when a model folder is read."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.schemes.dp_fedsgd_claim import verify_client_dp, verify_dp_fedsgd
from privnlu.mechanisms.dp import calibrate
from privnlu.mechanisms.dp_claim import verify_dp_ie

from conftest import predict_refusal, tiny_model_folder

RESULTS = Path(__file__).resolve().parents[2] / "results"
#: a sound calibration: Gaussian, epsilon 8 at delta 1e-5 over k = 4 encodings per example for 2 epochs
GENUINE = calibrate("gaussian", epsilon=8, delta=1e-5, clip=1.0, dim=16, k=4, epochs=2).to_json()
#: DP-FedSGD's report for noise multiplier 1.1 over 20 rounds (epsilon about 25 at delta 1e-5)
FEDSGD = {"unit": "client-level", "clipping_norm": 1.0, "noise_multiplier": 1.1, "num_sampled_clients": 4,
          "releases": 20, "delta": 1e-5, "accountant": "dp-accounting PLD"}
DP_IE_FORGERIES = {
    "overstated": ({"accounted_epsilon": 1.0}, "epsilon 1 is below"),
    "fewer encodings": ({"participations": 1, "noise": GENUINE["noise"] / 4, "noise_multiplier": None,
                         "sensitivity": None}, "below"),
    "stated multiplier": ({"noise_multiplier": GENUINE["noise_multiplier"] * 10}, "'noise_multiplier'"),
    "NaN": ({"accounted_epsilon": math.nan}, "'accounted_epsilon'"),
    "text": ({"noise": "abc"}, "'noise'"),
    "no delta": ({"delta": None}, "'delta'"),
    "negative clip": ({"clip": -1.0}, "'clip'"),
    "unknown mechanism": ({"mechanism": "uniform"}, "'mechanism'"),
    "per-batch with epsilon": ({"noise_reading": "per-batch"}, "per-batch"),
    "valid paper": ({"calibration": "paper"}, "'valid_dp_guarantee'"),
}


def _fedsgd_epsilon() -> float:
    from privnlu.mechanisms.dp_fedsgd import epsilon_spent

    return epsilon_spent(FEDSGD["noise_multiplier"], FEDSGD["releases"], FEDSGD["delta"])


def _changed(block: dict, change: dict) -> dict:
    return {k: v for k, v in {**block, **change}.items() if v is not None}


def test_a_genuine_dp_ie_calibration_passes():
    assert verify_dp_ie(GENUINE, where="x") == pytest.approx(GENUINE["accounted_epsilon"])
    paper = calibrate("laplace", epsilon=8, delta=1e-5, clip=1.0, dim=16, k=4, epochs=2, calibration="paper")
    assert verify_dp_ie(paper.to_json(), where="x") > 8  # the paper's calibration states the epsilon it really has
    batch = calibrate("gaussian", epsilon=8, delta=1e-5, clip=1.0, dim=16, k=4, epochs=2, noise="per-batch")
    assert verify_dp_ie(batch.to_json(), where="x") is None  # no finite epsilon claimed
    within = {**GENUINE, "accounted_epsilon": GENUINE["accounted_epsilon"] * 0.995}
    assert verify_dp_ie(within, where="x") == within["accounted_epsilon"]  # within 1 %


@pytest.mark.parametrize("case", sorted(DP_IE_FORGERIES))
def test_a_forged_or_malformed_dp_ie_calibration_is_one_line(case):
    change, word = DP_IE_FORGERIES[case]
    with pytest.raises(PrivnluError) as exc:
        verify_dp_ie(_changed(GENUINE, change), where="enc.safetensors")
    assert str(exc.value).startswith("enc.safetensors: ") and word in str(exc.value), str(exc.value)
    assert "\n" not in str(exc.value)


def test_fewer_encodings_than_the_release_makes_are_refused():
    with pytest.raises(PrivnluError, match="'participations' is 8, fewer than the 12"):
        verify_dp_ie(GENUINE, where="x", least=12)


def test_dp_fedsgd_claim_is_recomputed():
    eps = _fedsgd_epsilon()
    assert verify_dp_fedsgd({**FEDSGD, "epsilon": eps}, where="x") == eps
    with pytest.raises(PrivnluError, match=rf"^x: the claimed DP-FedSGD epsilon 1 is below {eps:.4g}, "):
        verify_dp_fedsgd({**FEDSGD, "epsilon": 1.0}, where="x")
    for change, word in (({"releases": 2.5}, "'releases'"), ({"noise_multiplier": math.inf}, "'noise_multiplier'"),
                         ({"delta": 0}, "'delta'"), ({"epsilon": None}, "'epsilon'")):
        with pytest.raises(PrivnluError, match=word):
            verify_dp_fedsgd(_changed({**FEDSGD, "epsilon": eps}, change), where="x")


def _client_dp_record() -> dict:
    return json.loads((RESULTS / "huang2020" / "federated-client-dp-sgd" / "client_dp_eps3.json").read_text())


def test_client_dp_claims_are_recomputed_per_client():
    block = _client_dp_record()["client_dp"]
    assert verify_client_dp(block, where="x") == block["epsilon"]
    forged = json.loads(json.dumps(block))
    forged["clients"][1]["epsilon"] = 0.5
    with pytest.raises(PrivnluError, match=r"^x: client 1: the claimed DP-SGD epsilon 0.5 is below 2\.9"):
        verify_client_dp(forged, where="x")
    with pytest.raises(PrivnluError, match="smaller than its worst client's"):
        verify_client_dp({**block, "epsilon": 1.0}, where="x")
    with pytest.raises(PrivnluError, match="'clients'"):
        verify_client_dp({**block, "clients": []}, where="x")


def test_every_committed_dp_record_still_verifies():
    """Every record under results/ (DP-SGD, DP instance encoding train records and attack conditions, client
    DP-SGD) passes the report's check."""
    from privnlu.io import record_files
    from privnlu.report.dp_claims import check_dp_claims

    seen = {"dp-ie": 0, "client_dp": 0, "dp-sgd": 0}
    for f in record_files(RESULTS, recursive=True):
        rec = json.loads(f.read_text())
        for r in rec if isinstance(rec, list) else [rec]:
            if isinstance(r, dict) and "kind" in r:
                check_dp_claims(r, f)
                dp = r.get("dp") if isinstance(r.get("dp"), dict) else {}
                conds = r.get("conditions") if isinstance(r.get("conditions"), dict) else {}
                seen["dp-sgd"] += dp.get("method") == "dp-sgd"
                seen["dp-ie"] += ("accounted_epsilon" in dp and dp.get("method") is None) + sum(
                    isinstance(c, dict) and c.get("dp_calibration") is not None for c in conds.values())
                seen["client_dp"] += "client_dp" in r
    assert seen["dp-ie"] >= 250 and seen["client_dp"] >= 2 and seen["dp-sgd"] >= 3, seen


def _report_refused(capsys, tmp_path: Path, record: dict, word: str) -> None:
    bad = tmp_path / "forged.json"
    bad.write_text(json.dumps(record))
    out = tmp_path / "report"
    capsys.readouterr()
    code = main(["report", str(bad), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(bad) in err and word in err, err
    assert not out.exists()


def _dp_ie_record() -> dict:
    folder = RESULTS / "xie2022" / "figure1-sst2-joint-gaussian-repeats"
    return json.loads(sorted(folder.glob("*eps10*.json"))[0].read_text())


@pytest.mark.parametrize("case", ["overstated", "fewer encodings than k x epochs", "NaN"])
def test_the_report_refuses_a_forged_dp_ie_record(case, tmp_path, capsys):
    rec = _dp_ie_record()
    change, word = {"overstated": ({"accounted_epsilon": 0.5}, "below"),
                    "fewer encodings than k x epochs": ({"participations": 1}, "'participations'"),
                    "NaN": ({"accounted_epsilon": math.nan}, "'accounted_epsilon'")}[case]
    rec["dp"] = {**rec["dp"], **change}
    _report_refused(capsys, tmp_path, rec, word)


def test_the_report_refuses_a_forged_attack_condition(tmp_path, capsys):
    f = sorted((RESULTS / "xie2022" / "figure2").glob("rec_sst2_dp-ie_gaussian_correct_eps4.json"))[0]
    rec = json.loads(f.read_text())
    name = next(iter(rec["conditions"]))
    rec["conditions"][name]["dp_calibration"]["accounted_epsilon"] = 0.1
    _report_refused(capsys, tmp_path, rec, f"conditions.{name}.dp_calibration")


def test_the_report_refuses_a_forged_federated_record(tmp_path, capsys):
    rec = _client_dp_record()
    rec["client_dp"]["clients"][0]["epsilon"] = 0.3
    _report_refused(capsys, tmp_path, rec, "client 0")
    fed = {"kind": "federated", "task": "sst2", "label": "x", "dp": {**FEDSGD, "epsilon": 0.5}}
    _report_refused(capsys, tmp_path, fed, "DP-FedSGD epsilon 0.5 is below")


def test_the_report_still_builds_from_genuine_dp_ie_and_client_dp_records(tmp_path, capsys):
    good = tmp_path / "in"
    good.mkdir()
    (good / "dp.json").write_text(json.dumps(_dp_ie_record()))
    (good / "cdp.json").write_text(json.dumps(_client_dp_record()))
    assert main(["report", str(good), "--out", str(tmp_path / "report")]) == 0, capsys.readouterr().err


def _payload(tmp_path: Path, dp: dict | None, **meta) -> Path:
    from privnlu.mechanisms.release import SharedPayload

    n, k, epochs = 6, 4, 2
    meta = {"k": k, "epochs": epochs, "n_examples": n // epochs, "m": "0", "label_names": ["neg", "pos"],
            "scheme": "dp-ie", **({"dp": dp} if dp is not None else {}), **meta}
    return SharedPayload(torch.randn(n, 16), torch.rand(n, 2), meta).save(tmp_path / "enc.safetensors")


def test_a_payload_with_a_forged_dp_claim_is_refused_on_load(tmp_path):
    from privnlu.mechanisms.release import SharedPayload

    assert SharedPayload.load(_payload(tmp_path, GENUINE)).meta["dp"] == GENUINE
    cases = [({**GENUINE, "accounted_epsilon": 0.5}, {}, "below"),
             (GENUINE, {"epochs": 3, "n_examples": 2}, "fewer than the 12"),
             (None, {}, "without its calibration")]
    for dp, meta, word in cases:
        path = _payload(tmp_path, dp, **meta)
        with pytest.raises(PrivnluError) as exc:
            SharedPayload.load(path)
        assert str(exc.value).startswith(str(path)) and word in str(exc.value) and "\n" not in str(exc.value)


@pytest.fixture(scope="module")
def dp_ie_model(tmp_path_factory, tiny_model) -> Path:
    """The model folder of a tiny frozen DP instance encoding run."""
    return tiny_model_folder(tmp_path_factory.mktemp("dpie"), tiny_model, "--scheme", "dp-ie", "--dp-epsilon", "8",
                             "--k", "2")


@pytest.mark.parametrize("case", ["overstated", "text"])
def test_predict_refuses_a_dp_ie_model_whose_claim_its_mechanism_does_not_give(case, dp_ie_model, tmp_path, capsys,
                                                                              monkeypatch):

    folder = Path(shutil.copytree(dp_ie_model, tmp_path / "model"))
    cfg = json.loads((folder / "privnlu.json").read_text())
    change, word = {"overstated": ({"accounted_epsilon": 0.5}, "below"), "text": ({"clip": "1"}, "'clip'")}[case]
    cfg["privacy"]["dp"] = {**cfg["privacy"]["dp"], **change}
    (folder / "privnlu.json").write_text(json.dumps(cfg))

    err = predict_refusal(folder, monkeypatch, capsys)
    assert "privacy.dp" in err and word in err, err


def test_predict_still_loads_a_genuine_dp_ie_model(dp_ie_model, capsys):
    capsys.readouterr()
    assert main(["predict", "--run", str(dp_ie_model), "--text", "a fine good film"]) == 0, capsys.readouterr().err
