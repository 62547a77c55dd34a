"""A received DP-SGD guarantee is recomputed from its own mechanism, never taken on trust
(privnlu.schemes.dp_sgd_claim): in ``predict`` on load, in the model card and in ``privnlu report``."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.schemes.dp_sgd_claim import verify_dp_sgd

from conftest import predict_refusal, tiny_model_folder

RESULTS = Path(__file__).resolve().parents[2] / "results" / "xie2022" / "dp-sgd-sst2-frozen"
#: noise 0.4675 on a batch of everything for one step: epsilon about 8.3 at delta 1e-3 (PRV)
FORGED = {"method": "dp-sgd", "epsilon": 0.01, "accounted_epsilon": 0.01, "delta": 1e-3, "noise_multiplier": 0.4675,
          "sample_rate": 1.0, "steps": 1, "accountant": "prv", "clip": 1.0}
BAD_FIELDS = {"overstated": ({}, "below"), "NaN": ({"epsilon": math.nan}, "'epsilon'"),
              "negative": ({"epsilon": -1}, "'epsilon'"), "text": ({"epsilon": "abc"}, "'epsilon'"),
              "no delta": ({"delta": None}, "'delta'"), "huge noise": ({"noise_multiplier": 1e300}, "noise_multiplier"),
              "tiny noise": ({"noise_multiplier": 1e-300}, "noise_multiplier"),
              "accounted overstated": ({"epsilon": 9.0}, "below"), "steps 0": ({"steps": 0}, "'steps'")}


def test_a_claim_its_mechanism_gives_passes_and_a_smaller_one_is_refused():
    assert verify_dp_sgd({**FORGED, "epsilon": 8.4, "accounted_epsilon": 8.4}, where="x") == 8.4
    assert verify_dp_sgd({**FORGED, "epsilon": 8.25, "accounted_epsilon": 8.25}, where="x") == 8.25  # within 1 %
    with pytest.raises(PrivnluError, match=r"^x: the claimed DP-SGD epsilon 0.01 is below 8.\d+"):
        verify_dp_sgd(FORGED, where="x")
    rdp = {**FORGED, "accountant": "rdp", "epsilon": 8.5, "accounted_epsilon": 8.5}  # RDP gives about 9.18
    with pytest.raises(PrivnluError, match="below 9.1"):
        verify_dp_sgd(rdp, where="x")


@pytest.mark.parametrize("case", sorted(BAD_FIELDS))
def test_a_malformed_or_overstated_record_is_one_line(case):
    change, word = BAD_FIELDS[case]
    dp = {k: v for k, v in {**FORGED, **change}.items() if v is not None}  # "accounted overstated": 0.01 stays
    with pytest.raises(PrivnluError) as exc:
        verify_dp_sgd(dp, where="model/privnlu.json")
    assert str(exc.value).startswith("model/privnlu.json: ") and word in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_run_too_large_for_the_default_mesh_is_checked_on_a_coarser_one():
    """Noise 0.2 over 800 steps needs about 9.5 million PRV points at Opacus's default mesh (about 1.6 GB): the
    check uses a coarser mesh's lower bound (about 385) instead, and still refuses a claim below it."""
    dp = {**FORGED, "noise_multiplier": 0.2, "sample_rate": 0.025, "steps": 800, "delta": 1e-5}
    with pytest.raises(PrivnluError, match="is below 38"):
        verify_dp_sgd({**dp, "epsilon": 300, "accounted_epsilon": 300}, where="x")
    assert verify_dp_sgd({**dp, "epsilon": 386, "accounted_epsilon": 386}, where="x") == 386
    with pytest.raises(PrivnluError, match="cannot verify"):  # beyond any accountant's range: refused, no crash
        verify_dp_sgd({**dp, "noise_multiplier": 0.05, "epsilon": 900, "accounted_epsilon": 900}, where="x")


def test_every_committed_dp_sgd_record_verifies():
    files = sorted(RESULTS.parent.rglob("*.json"))
    checked = 0
    for f in files:
        rec = json.loads(f.read_text())
        if (rec.get("dp") or {}).get("method") == "dp-sgd":
            verify_dp_sgd(rec["dp"], where=str(f))
            checked += 1
    assert checked >= 3


def test_the_card_and_the_scheme_refuse_a_forged_record():
    from privnlu import schemes
    from privnlu.model_folder.card import dp_sgd_rows

    with pytest.raises(PrivnluError, match="below"):
        dp_sgd_rows(FORGED)
    with pytest.raises(PrivnluError, match="below"):
        schemes.create("dp-sgd").guarantee(calibration=FORGED)
    with pytest.raises(PrivnluError, match="'delta'"):
        schemes.create("dp-sgd").guarantee(calibration={k: v for k, v in FORGED.items() if k != "delta"})


def _report_refused(capsys, tmp_path: Path, record: dict, word: str) -> None:
    good = shutil.copy(sorted(RESULTS.glob("*.json"))[0], tmp_path / "good.json")
    bad = tmp_path / "forged.json"
    bad.write_text(json.dumps(record))
    out = tmp_path / "report"
    capsys.readouterr()
    code = main(["report", str(good), str(bad), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(bad) in err and word in err, err
    assert not out.exists()


@pytest.mark.parametrize("case", ["overstated", "NaN", "text", "no delta"])
def test_the_report_refuses_a_record_whose_guarantee_its_mechanism_does_not_give(case, tmp_path, capsys):
    rec = json.loads(sorted(RESULTS.glob("*eps8*.json"))[0].read_text())
    change = {"epsilon": 0.01, "accounted_epsilon": 0.01} if case == "overstated" else BAD_FIELDS[case][0]
    rec["dp"] = {k: v for k, v in {**rec["dp"], **change}.items() if v is not None}
    _report_refused(capsys, tmp_path, rec, "below" if case == "overstated" else BAD_FIELDS[case][1])


def test_the_report_refuses_an_audit_guarantee_above_its_dp_sgd_block(tmp_path, capsys):
    rec = json.loads(sorted(RESULTS.glob("*eps8*.json"))[0].read_text())
    audit = {"kind": "audit", "task": "sst2", "scheme": "dp-sgd", "train": {"dp": rec["dp"]},
             "guarantee": {"kind": "dp", "text": "(0.01, 2e-05)-DP", "epsilon": 0.01, "delta": 2e-5}}
    _report_refused(capsys, tmp_path, audit, "guarantee.epsilon")


@pytest.fixture(scope="module")
def dp_sgd_model(tmp_path_factory, tiny_model) -> Path:
    """The model folder of a tiny frozen DP-SGD run."""
    return tiny_model_folder(tmp_path_factory.mktemp("dpsgd"), tiny_model, "--scheme", "dp-sgd", "--dp-epsilon", "8")


@pytest.mark.parametrize("case", ["overstated", "NaN", "negative", "text", "no delta"])
def test_predict_refuses_a_model_whose_claim_its_mechanism_does_not_give(case, dp_sgd_model, tmp_path, capsys,
                                                                          monkeypatch):

    folder = Path(shutil.copytree(dp_sgd_model, tmp_path / "model"))
    cfg = json.loads((folder / "privnlu.json").read_text())
    dp = cfg["privacy"]["dp"]
    change = ({"epsilon": 0.01, "accounted_epsilon": 0.01} if case == "overstated" else BAD_FIELDS[case][0])
    cfg["privacy"]["dp"] = {k: v for k, v in {**dp, **change}.items() if v is not None}
    (folder / "privnlu.json").write_text(json.dumps(cfg))

    err = predict_refusal(folder, monkeypatch, capsys)
    assert (BAD_FIELDS[case][1] if case != "overstated" else "below") in err, err


def test_predict_still_states_a_true_claim(dp_sgd_model, capsys):
    capsys.readouterr()
    assert main(["predict", "--run", str(dp_sgd_model), "--text", "a fine good film"]) == 0
    assert "-DP per training example" in capsys.readouterr().err
