"""Large empirical audits say what they will cost before they start (``dp audit``), and ``dp audit-sgd`` refuses
more canaries than it can hold in one line (privnlu.attacks.privacy_audit.mechanism,
privnlu.attacks.privacy_audit.dp_sgd)."""

from __future__ import annotations

import pytest

from privnlu.attacks.privacy_audit import mechanism as dp_audit
from privnlu.attacks.privacy_audit.dp_sgd import MAX_CANARIES, check_canaries
from privnlu.cli.main import main
from privnlu.errors import PrivnluError


def test_a_large_audit_has_an_estimate_and_a_small_one_none():
    line = dp_audit.work_estimate(100_000_000, 64)
    assert line is not None and "min on one core" in line and "6.0 GiB of memory" in line, line
    assert dp_audit.work_estimate(100_000, 64) is None
    assert "GiB" in dp_audit.work_estimate(20_000_000, 1, claims=3, dchi=True)


def test_dp_audit_prints_its_time_and_memory_before_it_starts(monkeypatch, capsys):
    calls = []

    def stop(*args, **kwargs):
        calls.append(capsys.readouterr().err)  # what was said before the first draw
        raise PrivnluError("stopped before the draws")

    monkeypatch.setattr(dp_audit, "physical_memory", lambda: 64 * 2**30)
    monkeypatch.setattr(dp_audit, "audit_encoding", stop)
    capsys.readouterr()
    assert main(["dp", "audit", "--dp-epsilon", "8", "--draws", "100000000", "--quiet"]) == 2
    [before] = calls
    assert "100,000,000 draws per hypothesis" in before and "min on one core" in before and "GiB" in before, before
    assert "Traceback" not in capsys.readouterr().err


def test_small_audits_stay_silent():
    assert dp_audit.work_estimate(1000, 64) is None


def test_too_many_canaries_are_one_line(capsys):
    capsys.readouterr()
    assert main(["dp", "audit-sgd", "--canaries", "100000000", "--task", "tweets"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--canaries" in err and "Traceback" not in err, err
    with pytest.raises(PrivnluError, match="at most|in \\[2, 1,000,000\\]"):
        check_canaries(MAX_CANARIES + 1, 384)
    with pytest.raises(PrivnluError, match=r"--canaries 500,000 at width 384 need about 2.9 GiB .* lower --canaries"):
        check_canaries(500_000, 384, memory=2**30)
    check_canaries(1000, 384, memory=2**30)


def test_the_audit_refuses_canaries_beyond_memory_before_drawing_them(monkeypatch):
    import torch

    from privnlu.attacks.privacy_audit import dp_sgd as dp_sgd_audit
    from privnlu.training.dp_sgd import DPSGDConfig

    monkeypatch.setattr(dp_audit, "physical_memory", lambda: 2**20)  # 1 MiB: 1,000 canaries at width 64 do not fit
    monkeypatch.setattr(dp_sgd_audit, "make_canaries", lambda *a, **k: pytest.fail("canaries were drawn"))
    x, y = torch.randn(20, 64), torch.arange(20) % 2
    with pytest.raises(PrivnluError, match="--canaries 1,000 at width 64"):
        dp_sgd_audit.audit_dp_sgd(x, y, num_outputs=2, config=DPSGDConfig(epsilon=1.0, delta=1e-5), canaries=1000)
