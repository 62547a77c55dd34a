"""Gradient matching (DLG, TextHide Algorithm 3): succeeds undefended, fails against TextHide, works on a wire capture."""

from __future__ import annotations

import inspect

import pytest
import torch

from federated_helpers import InProcessGrid, ensure_task_identity
from privnlu.attacks.gradient_matching import (
    GradientMatchingAttack, GradientMatchingConfig, Trial, attack_capture, plan, run_trial, score, summarize, sweep,
)
from privnlu.federated import FederatedConfig, WireLog
from privnlu.federated.client import make_client_app
from privnlu.federated.data import cached_features, load_train, shard_indices
from privnlu.federated.model import frozen_encoder
from privnlu.federated.server import run_server


def features(n=64, dim=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return 0.4 * torch.randn(n, dim, generator=g), torch.randint(0, 2, (n,), generator=g)


def test_attacker_is_given_only_the_model_gradient_and_label():
    assert list(inspect.signature(GradientMatchingAttack.__init__).parameters) == ["self", "head", "config", "regression"]
    assert list(inspect.signature(GradientMatchingAttack.run).parameters) == ["self", "gradient", "label", "dim", "masked",
                                                                             "on_step"]


def test_attack_recovers_an_undefended_input():
    x, y = features()
    row = run_trial(x, y, Trial(dim=16, k=0, index=3, seed=5))
    assert row["success"] and row["mse"] < 1e-6, row


@pytest.mark.parametrize("k", [1, 2])
def test_attack_fails_against_texthide(k):
    """With the secret mask (m = 1) the dummy gradient still matches, but the input is not recovered."""
    x, y = features()
    row = run_trial(x, y, Trial(dim=16, k=k, index=3, seed=5))
    assert not row["success"] and row["mse"] > 1e-2, row


@pytest.mark.parametrize("k", [0, 1, 2])
def test_stopping_at_the_lbfgs_fixed_point_changes_nothing(k):
    """The early stop (two whole L-BFGS steps that leave x', s' bitwise unchanged) returns bit for bit what
    the full 1,200 iterations return, in fewer iterations."""
    x, y = features()
    tr = Trial(dim=16, k=k, index=7, seed=11)
    full = run_trial(x, y, tr, config=GradientMatchingConfig(stop_at_fixed_point=False))
    early = run_trial(x, y, tr, config=GradientMatchingConfig())
    for key in ("mse", "success", "encoding_mse", "abs_mse", "grad_distance"):
        assert early[key] == full[key], (key, early, full)
    assert early["iterations"] < full["iterations"] == 1200


def test_a_resumed_sweep_attacks_the_same_examples():
    x, y = features()
    cfg = GradientMatchingConfig(iterations=40)
    kw = dict(dims=[4, 8], ks=[0, 1], trials=2, seed=3, config=cfg)
    full = sweep(x, y, **kw)
    rest = sweep(x, y, **kw, skip={(4, 0), (4, 1)})
    def strip(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert strip(r for r in full if r["d"] == 8) == strip(rest) and len(rest) == 4
    assert plan(64, dims=[4, 8], ks=[0, 1], trials=2, seed=3) == plan(64, dims=[4, 8], ks=[0, 1], trials=2, seed=3)


def test_summary_and_score():
    assert score(torch.zeros(3), torch.tensor([[1.0, 1, 1], [0.01, 0, 0]]))[1]
    rows = [{"d": 4, "k": 0, "success": True}, {"d": 4, "k": 0, "success": False}, {"d": 4, "k": 2, "success": False}]
    assert summarize(rows) == {"d=4": {"baseline": 0.5, "k=2": 0.0}}


def test_attack_on_gradients_captured_from_a_flower_run(tiny_model, tmp_path):
    """The eavesdropper's capture of a real FedSGD run (batch size 1, frozen tiny-BERT features):
    without TextHide DLG recovers the client's representation; with (m, k) = (2, 1) it does not."""
    ensure_task_identity()
    base = dict(task="tweets", model=str(tiny_model), clients=2, rounds=1, batch_size=1, train_limit=40, dev_limit=20,
                cache_dir=str(tmp_path / "cache"), seed=4, dropout=0.0, hidden="32,32")
    results = {}
    for name, kw in {"none": dict(scheme="none", m="0", k=1), "texthide": dict(m="2", k=1)}.items():
        cfg = FederatedConfig(**base, **kw)
        log = WireLog()
        run_server(InProcessGrid(make_client_app(cfg), cfg.clients), cfg, out=None, wire=log)
        node = log.received[0]["node_id"]
        out, info = attack_capture(log, round=1, node_id=node, masked=name == "texthide",
                                   config=GradientMatchingConfig(seed=0))
        train = load_train(cfg)
        part = node - 100  # InProcessGrid numbers nodes 100 + partition
        feats = cached_features(cfg, frozen_encoder(str(tiny_model), "cls"), train)
        shard = feats[torch.from_numpy(shard_indices(len(train), cfg.clients, part))]
        results[name] = score(out.recovered, shard)
        assert info["num_examples"] == 1
    assert results["none"][1] and results["none"][0] < 1e-4, results
    assert not results["texthide"][1], results


def test_report_sections_for_federated_runs_and_the_attack_heatmap(tmp_path):
    from privnlu.io import write_json_atomic
    from privnlu.report import build_report

    x, y = features()
    rows = [run_trial(x, y, Trial(dim=4, k=k, index=i, seed=i), config=GradientMatchingConfig(iterations=40))
            for k in (0, 2) for i in range(2)]
    write_json_atomic(tmp_path / "res" / "gm.json", {"kind": "gradient_attack", "source": "sweep", "rows": rows})
    hist = [{"round": r, "eval": {"dev": {"score": 50.0 + r}}} for r in (1, 2)]
    write_json_atomic(tmp_path / "res" / "fed.json", {
        "kind": "federated", "label": "tweets-fedsgd-m6-k2-c3", "task": "tweets", "algorithm": "fedsgd", "mode": "frozen",
        "clients": 3, "rounds": 2, "m": "6", "k": 2, "score": 52.0, "best_score": 52.0, "seconds": 1.0, "history": hist})
    page = build_report([tmp_path / "res"], tmp_path / "report").read_text()
    assert "Federated TextHide on Flower" in page and "tweets-fedsgd-m6-k2-c3" in page
    assert "Gradient-matching attack" in page and (tmp_path / "report" / "gradient_attack_heatmap.png").exists()
