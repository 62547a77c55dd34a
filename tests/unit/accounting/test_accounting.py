"""privnlu.accounting: DP events, their JSON, the accountants' registry, calibration, and the places that use it.

The expected values of the migrated places (``BEFORE``) were computed with privnlu's accounting code as it was
before it moved into :mod:`privnlu.accounting` (each place calling dp-accounting or Opacus itself; same parameters,
same library versions: dp-accounting 0.6, Opacus 1.6); the migration keeps them to the last digit.
"""

from __future__ import annotations

import json
import math

import dp_accounting
import pytest

from privnlu import accounting
from privnlu.accounting import (Accountant, create_accountant, epsilon, event_from_json, event_to_json,
                                gaussian_event, laplace_event, noise_for, register_accountant)
from privnlu.errors import PrivnluError

#: values of the code before the migration (see the module docstring)
BEFORE = {
    "composed_gaussian": 35.63646119493173,  # mechanisms.dp.composed_epsilon("gaussian", 1.2, 40, 1e-5)
    "composed_gaussian_quick": 37.72064290794515,  # the same with pld=False
    "composed_laplace": 1.989962408799076,  # composed_epsilon("laplace", 5.0, 10, 1e-5)
    "composed_laplace_many": 8.252169591223037,  # composed_epsilon("laplace", 300.0, 200000, 1e-6)
    "calibrate_gaussian": (1.2004593448560477, 7.999990349401844),  # calibrate gaussian eps 8, k 4, 1 epoch
    "calibrate_laplace": (2.0, 3.9974502554100826),  # calibrate laplace eps 4, k 4, 2 epochs
    "calibrate_paper": (1.4496314780470203, 12.475922602779605),  # paper calibration, gaussian eps 2, k 4, 3 epochs
    "fedsgd_spent": 47.31185135232165,  # mechanisms.dp_fedsgd.epsilon_spent(1.1, 50, 1e-5)
    "fedsgd_noise": 14.098383007286799,  # mechanisms.dp_fedsgd.noise_multiplier_for(2.0, 1e-5, 50)
    "dp_sgd_rdp_noise": 0.546875,  # training.dp_sgd.calibrate(8.0, 1e-5, 0.01, 300, "rdp")
    "client_prv": 3.5124176411452126,  # federated.client_dp.accounted_epsilon(1.0, 0.05, 100, 1e-5)
    "claim_rdp": 4.038336159696808,  # schemes.dp_sgd_claim.accounted_epsilon(1.0, 0.05, 100, 1e-5, "rdp")
    "ledger_mixed": 6.761771800206443,  # schemes.ledger.compose_events(MIXED, 1e-5)
    "ledger_gaussian": 6.572970123762753,  # schemes.ledger.compose_events(MIXED[:1], 1e-5)
}
MIXED = [{"kind": "gaussian", "noise_multiplier": 2.0, "count": 8},
         {"kind": "laplace", "noise_multiplier": 20.0, "count": 3},
         {"kind": "poisson-gaussian", "noise_multiplier": 1.0, "sample_rate": 0.01, "count": 500}]
SAME = {"rel": 1e-12}


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


# -- events and their JSON -------------------------------------------------------------------------------------------

def test_constructors_build_dp_accounting_events():
    e = gaussian_event(1.5, 0.01, 20)
    assert e == dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.5)), 20)
    assert laplace_event(3.0, steps=4) == dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(3.0), 4)


@pytest.mark.parametrize("event", [gaussian_event(1.0, None, 5), gaussian_event(0.8, 0.02, 1000), laplace_event(2.5),
                                   laplace_event(4.0, 0.5, 3),
                                   accounting.compose([gaussian_event(1.0, None, 2), laplace_event(9.0, None, 7)])])
def test_json_round_trip(event):
    d = event_to_json(event)
    again = event_from_json(json.loads(json.dumps(d)))
    assert again == event and event_to_json(again) == d


def test_json_is_the_ledgers_event_record():
    assert event_to_json(gaussian_event(2.0, None, 8)) == MIXED[0]
    assert event_to_json(gaussian_event(1.0, 0.01, 500)) == MIXED[2]
    assert list(event_to_json(gaussian_event(1.0, 0.01, 500))) == ["kind", "noise_multiplier", "sample_rate", "count"]


@pytest.mark.parametrize("bad", [
    {"kind": "gaussian", "noise_multiplier": float("nan"), "count": 1},
    {"kind": "gaussian", "noise_multiplier": float("inf"), "count": 1},
    {"kind": "gaussian", "noise_multiplier": -1.0, "count": 1},
    {"kind": "gaussian", "noise_multiplier": 0, "count": 1},
    {"kind": "gaussian", "noise_multiplier": True, "count": 1},
    {"kind": "gaussian", "noise_multiplier": "1", "count": 1},
    {"kind": "gaussian", "noise_multiplier": 1.0, "count": 0},
    {"kind": "gaussian", "noise_multiplier": 1.0, "count": 1.5},
    {"kind": "poisson-gaussian", "noise_multiplier": 1.0, "sample_rate": 1.5, "count": 1},
    {"kind": "poisson-gaussian", "noise_multiplier": 1.0, "count": 1},
    {"kind": "exponential", "noise_multiplier": 1.0, "count": 1},
    {"kind": "composed", "events": []},
    [],
])
def test_bad_json_is_refused_in_one_line(bad):
    with pytest.raises(PrivnluError) as exc:
        event_from_json(bad)
    one_line(exc)


@pytest.mark.parametrize("z", [1e300, 1e-300])
@pytest.mark.parametrize("name", ["pld", "rdp", "tightest"])
def test_extreme_noise_is_one_line_not_an_overflow(z, name):
    try:
        value = epsilon(gaussian_event(z, None, 3), 1e-5, name)
    except PrivnluError as exc:
        assert "\n" not in str(exc) and name in str(exc)
    else:
        assert value >= 0


@pytest.mark.parametrize("delta", [0.0, 1.0, float("nan"), -1e-5])
def test_bad_delta_is_refused(delta):
    with pytest.raises(PrivnluError, match="delta") as exc:
        epsilon(gaussian_event(1.0), delta)
    one_line(exc)


# -- accountants ---------------------------------------------------------------------------------------------------

def test_pld_epsilon_of_a_gaussian_matches_dp_accounting():
    event = gaussian_event(1.1, None, 50)
    direct = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3 * max(1.0, 1.1 ** -2))
    direct.compose(event)
    mine = epsilon(event, 1e-5, interval=1e-3)
    assert mine == direct.get_epsilon(1e-5)
    # 50 Gaussians with multiplier z are one with z / sqrt(50): the analytic epsilon, which the PLD bounds from above
    analytic = dp_accounting.get_epsilon_gaussian(1.1 / math.sqrt(50), 1e-5)
    assert analytic <= mine <= analytic * 1.01


def test_rdp_epsilon_matches_dp_accounting():
    event = gaussian_event(1.0, 0.05, 100)
    direct = dp_accounting.rdp.RdpAccountant()
    direct.compose(event)
    assert epsilon(event, 1e-5, "rdp") == direct.get_epsilon(1e-5)


def test_pure_dp_composes_laplace_additively():
    assert epsilon(laplace_event(4.0, None, 6), 1e-5, "pure-dp") == pytest.approx(1.5)
    with pytest.raises(PrivnluError):
        epsilon(gaussian_event(4.0), 1e-5, "pure-dp")


def test_opacus_accountants_take_gaussian_steps_only():
    with pytest.raises(PrivnluError, match="Gaussian") as exc:
        epsilon(laplace_event(1.0), 1e-5, "opacus-rdp")
    one_line(exc)


def test_registry():
    assert {"pld", "rdp", "pure-dp", "tightest", "opacus-prv", "opacus-rdp"} <= set(accounting.accountant_names())
    assert isinstance(create_accountant("pld"), Accountant)
    with pytest.raises(PrivnluError, match="unknown accountant 'nope'") as exc:
        create_accountant("nope")
    one_line(exc)
    with pytest.raises(PrivnluError, match="unknown accountant"):
        epsilon(gaussian_event(1.0), 1e-5, "nope")
    with pytest.raises(TypeError):
        Accountant()  # abstract

    @register_accountant("test-constant")
    class Constant(Accountant):
        def epsilon(self, event, delta):
            return self.options.get("value", 1.0)

    try:
        assert epsilon(gaussian_event(1.0), 1e-5, "test-constant", value=2.5) == 2.5
        assert epsilon(gaussian_event(1.0), 1e-5, Constant()) == 1.0
    finally:
        accounting.accountants._REGISTRY.pop("test-constant")


# -- calibration -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", [0.5, 2.0, 8.0])
def test_noise_for_round_trips_by_raising(target):
    def make(z):
        return gaussian_event(z, None, 20)

    start = accounting.analytic_gaussian_sigma(target, 1e-5) * math.sqrt(20)
    z = noise_for(target, 1e-5, make, start=start, interval=1e-3)
    assert target * 0.98 <= epsilon(make(z), 1e-5, interval=1e-3) <= target


@pytest.mark.parametrize("target", [1.0, 4.0])
def test_noise_for_round_trips_by_bisection(target):
    def make(z):
        return laplace_event(z, None, 5)

    z = noise_for(target, 1e-5, make, "tightest", lo=0.5 / target, hi=5 / target)
    assert target * 0.98 <= epsilon(make(z), 1e-5, "tightest") <= target


def test_noise_for_with_opacus_search():
    def make(z):
        return gaussian_event(z, 0.01, 300)

    z = noise_for(8.0, 1e-5, make, "opacus-rdp")
    assert z == BEFORE["dp_sgd_rdp_noise"]
    assert 8.0 * 0.97 <= epsilon(make(z), 1e-5, "opacus-rdp") <= 8.0


def test_noise_for_refuses_a_bad_target():
    with pytest.raises(PrivnluError, match="target epsilon") as exc:
        noise_for(float("inf"), 1e-5, gaussian_event, start=1.0)
    one_line(exc)


# -- the migrated places give the numbers they gave before -----------------------------------------------------

def test_dp_instance_encoding_numbers_unchanged():
    from privnlu.mechanisms.dp import calibrate, composed_epsilon

    assert composed_epsilon("gaussian", 1.2, 40, 1e-5) == pytest.approx(BEFORE["composed_gaussian"], **SAME)
    assert composed_epsilon("gaussian", 1.2, 40, 1e-5, pld=False) == pytest.approx(BEFORE["composed_gaussian_quick"],
                                                                                   **SAME)
    assert composed_epsilon("laplace", 5.0, 10, 1e-5) == pytest.approx(BEFORE["composed_laplace"], **SAME)
    assert composed_epsilon("laplace", 300.0, 200000, 1e-6) == pytest.approx(BEFORE["composed_laplace_many"], **SAME)
    for key, kw in (("calibrate_gaussian", dict(kind="gaussian", epsilon=8, k=4, epochs=1)),
                    ("calibrate_laplace", dict(kind="laplace", epsilon=4, k=4, epochs=2)),
                    ("calibrate_paper", dict(kind="gaussian", epsilon=2, k=4, epochs=3, calibration="paper"))):
        cal = calibrate(**kw, delta=1e-5, clip=1, dim=8)
        assert (cal.mechanism.noise_multiplier, cal.epsilon) == pytest.approx(BEFORE[key], **SAME)


def test_dp_fedsgd_numbers_unchanged():
    from privnlu.mechanisms.dp_fedsgd import epsilon_spent, noise_multiplier_for

    assert epsilon_spent(1.1, 50, 1e-5) == pytest.approx(BEFORE["fedsgd_spent"], **SAME)
    assert noise_multiplier_for(2.0, 1e-5, 50) == pytest.approx(BEFORE["fedsgd_noise"], **SAME)


def test_dp_sgd_numbers_unchanged():
    from privnlu.federated.client_dp import accounted_epsilon as client_epsilon
    from privnlu.schemes.dp_sgd_claim import accounted_epsilon as claim_epsilon
    from privnlu.training.dp_sgd import calibrate

    assert calibrate(8.0, 1e-5, 0.01, 300, "rdp") == pytest.approx(BEFORE["dp_sgd_rdp_noise"], **SAME)
    assert client_epsilon(1.0, 0.05, 100, 1e-5) == pytest.approx(BEFORE["client_prv"], **SAME)
    assert claim_epsilon(1.0, 0.05, 100, 1e-5, "prv") == pytest.approx(BEFORE["client_prv"], **SAME)
    assert claim_epsilon(1.0, 0.05, 100, 1e-5, "rdp") == pytest.approx(BEFORE["claim_rdp"], **SAME)


def test_dp_sgd_training_epsilon_is_opacus_accountants():
    """What training reads off Opacus's engine (its accountant's history) is what the accounting module computes."""
    from opacus.accountants import create_accountant as opacus_accountant

    from privnlu.training.dp_sgd import accounted_epsilon, steps_event

    history = [(0.9, 0.02, 150)]
    for name in ("prv", "rdp"):
        acc = opacus_accountant(name)
        acc.history = list(history)
        assert accounted_epsilon(steps_event(history), 1e-5, name) == acc.get_epsilon(1e-5)


def test_ledger_numbers_unchanged():
    from privnlu.schemes.ledger import compose_events

    assert compose_events(MIXED, 1e-5) == pytest.approx(BEFORE["ledger_mixed"], **SAME)
    assert compose_events(MIXED[:1], 1e-5) == pytest.approx(BEFORE["ledger_gaussian"], **SAME)


def test_schemes_return_their_event():
    from privnlu.schemes.registry import create

    ie = create("dp-ie")
    cal = ie.calibrate(dim=8, epochs=2).to_json()
    assert ie.dp_event(calibration=cal) == gaussian_event(cal["noise_multiplier"], None, cal["participations"])
    assert create("dp-ie", noise="per-batch").dp_event(calibration=cal) is None
    sgd = create("dp-sgd")
    assert sgd.dp_event() is None
    rec = {"noise_multiplier": 0.9, "sample_rate": 0.02, "steps": 150, "epsilon": 3.0, "delta": 1e-5}
    assert sgd.dp_event(calibration=rec) == gaussian_event(0.9, 0.02, 150)
    assert create("texthide").dp_event() is None
