"""Client-side DP-SGD in federated training: calibrated noise on the client, per-client accounting, the record."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from flwr.app import RecordDict

from federated_helpers import InProcessGrid
from privnlu.errors import PrivnluError
from privnlu.federated import FederatedConfig
from privnlu.federated.client import TextHideClient, make_client_app
from privnlu.federated.client_dp import ClientDPRound, check_plan, client_dp_report, plan_client, shard_sizes
from privnlu.federated.data import shard_indices
from privnlu.federated.model import build_model, frozen_encoder
from privnlu.federated.server import run_server
from privnlu.federated.wire import WireLog


pytestmark = pytest.mark.usefixtures("flower_task_identity")


def make_cfg(tiny_model, tmp_path, **kw) -> FederatedConfig:
    base = dict(task="tweets", model=str(tiny_model), clients=2, rounds=3, scheme="none", m="0", k=1, batch_size=8,
                train_limit=80, dev_limit=40, cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0, lr=5e-3,
                client_dp_epsilon=3.0, eval_mask="none")
    base.update(kw)
    return FederatedConfig(**base)


def _round(cfg, partition: int = 0, rnd: int = 1, words=(11, 12)) -> tuple[ClientDPRound, TextHideClient]:
    client = TextHideClient(cfg, partition, RecordDict(), rnd)
    w0 = build_model(cfg, frozen_encoder(cfg.model, cfg.pooling), init_seed=0).to_arrays()
    client.model.load_arrays(w0)
    return ClientDPRound(client, cfg, words), client


def test_accounted_epsilon_is_at_most_the_target_and_close_to_it(tiny_model, tmp_path):
    cfg = make_cfg(tiny_model, tmp_path, rounds=20, client_dp_epsilon=3.0)
    plan = plan_client(cfg, 0, 40)
    assert plan.sample_rate == pytest.approx(8 / 40) and plan.steps == 20 and plan.delta == pytest.approx(1 / 400)
    eps = check_plan(plan)
    assert 3.0 - 0.05 <= eps <= 3.0  # Opacus's search stops within 0.01 in epsilon of the target
    # more rounds (same target) need more noise; fedavg counts every local step
    assert plan_client(make_cfg(tiny_model, tmp_path, rounds=40), 0, 40).noise_multiplier > plan.noise_multiplier
    fedavg = plan_client(make_cfg(tiny_model, tmp_path, rounds=20, algorithm="fedavg", local_steps=3), 0, 40)
    assert fedavg.steps == 60


def test_a_planted_under_noised_plan_fails_the_check(tiny_model, tmp_path):
    cfg = make_cfg(tiny_model, tmp_path, rounds=20)
    good = plan_client(cfg, 0, 40)
    check_plan(good)
    bad = plan_client(cfg, 0, 40, noise_multiplier=good.noise_multiplier * 0.8)
    with pytest.raises(PrivnluError, match="exceeds|> the target"):
        check_plan(bad)


def test_the_noise_a_client_adds_matches_the_calibrated_multiplier(tiny_model, tmp_path):
    """Same Poisson sample, with and without noise: the difference times the expected batch, over C, is
    N(0, z^2) on every coordinate (fixed seeds; the sample std within 5% of z over >= 1000 coordinates)."""
    cfg = make_cfg(tiny_model, tmp_path, hidden="32", client_dp_clip=0.5)
    diffs = []
    for rnd, words in enumerate([(1, 2), (3, 4), (5, 6)]):
        noisy, _ = _round(cfg, rnd=rnd + 1, words=words)
        clean, _ = _round(cfg, rnd=rnd + 1, words=words)
        clean.plan = type(clean.plan)(**{**clean.plan.__dict__, "noise_multiplier": 0.0})
        g, _, b = noisy.gradient()
        g0, _, b0 = clean.gradient()
        assert b == b0 == 8
        # the clean gradient is clipped: each example's contribution has norm <= C, so the mean has norm <= C
        assert math.sqrt(sum(float((v ** 2).sum()) for v in g0.values())) <= 0.5 + 1e-5
        diffs.append(torch.cat([(g[n] - g0[n]).flatten() for n in g]) * b / cfg.client_dp_clip)
    d = torch.cat(diffs)
    assert d.numel() >= 1000
    z = noisy.plan.noise_multiplier
    assert float(d.std()) == pytest.approx(z, rel=0.05)
    assert abs(float(d.mean())) < 4 * z / math.sqrt(d.numel())


def test_a_tiny_federated_run_with_client_dp_records_its_guarantee(tiny_model, tmp_path):
    cfg = make_cfg(tiny_model, tmp_path, rounds=2)
    log = WireLog()
    rec = run_server(InProcessGrid(make_client_app(cfg), cfg.clients), cfg, out=tmp_path / "run", wire=log)
    cdp = rec["client_dp"]
    assert cdp["unit"] == "example" and cdp["target_epsilon"] == 3.0 and 2.9 <= cdp["epsilon"] <= 3.0
    assert [c["n"] for c in cdp["clients"]] == shard_sizes(80, 2) == [len(shard_indices(80, 2, c)) for c in (0, 1)]
    assert all(c["steps"] == 2 and c["epsilon"] <= 3.0 for c in cdp["clients"])
    assert "per example" in rec["guarantee"] and rec["label"].endswith("-cdp3")
    # no loss and no actual sample size on the wire: the expected batch only
    metrics = [e for e in log.received if e["type"] == "train"]
    assert metrics and all("train-loss" not in e["metrics"]["metrics"] for e in metrics)
    assert all(e["metrics"]["metrics"]["num-examples"] == 8 for e in metrics)
    assert "train_loss" not in rec["history"][0]
    card = (tmp_path / "run" / rec["model_dir"] / "README.md").read_text()
    assert "per example" in card
    assert client_dp_report(cfg, 80)["epsilon"] == cdp["epsilon"]


def test_fedavg_and_row_wise_texthide_run_with_client_dp(tiny_model, tmp_path):
    cfg = make_cfg(tiny_model, tmp_path, rounds=1, algorithm="fedavg", local_steps=2, scheme="texthide", m="2", k=1)
    rec = run_server(InProcessGrid(make_client_app(cfg), cfg.clients), cfg, out=None)
    assert rec["client_dp"]["clients"][0]["steps"] == 2


@pytest.mark.parametrize("kw, msg", [
    (dict(scheme="texthide", m="2", k=2), "k = 2 mixes"),
    (dict(client_dp_delta=0.5), "above 1/n"),
    (dict(client_dp_clip=0.0), "client-dp-clip"),
    (dict(client_dp_epsilon=0.0, client_dp_delta=1e-5), "needs --client-dp-epsilon"),
])
def test_bad_client_dp_settings_are_one_line_errors(tiny_model, tmp_path, kw, msg):
    with pytest.raises(PrivnluError, match=msg):
        cfg = make_cfg(tiny_model, tmp_path, **kw)
        client_dp_report(cfg, 80)


def test_cli_refuses_local_noise_and_points_to_client_dp(capsys, tmp_path):
    from privnlu.cli.main import main

    code = main(["federated", "--task", "tweets", "--local-noise", "1", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--client-dp-epsilon" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_cli_runs_client_dp_and_records_each_shard_in_the_ledger(tiny_model, tmp_path, capsys):
    from privnlu.cli.main import main
    from privnlu.io import read_json
    from privnlu.schemes.ledger import Ledger, compose_events

    args = ["federated", "--task", "tweets", "--model", str(tiny_model), "--scheme", "none", "--clients", "2",
            "--rounds", "1", "--batch-size", "8", "--train-limit", "40", "--dev-limit", "20", "--cache-dir",
            str(tmp_path / "c"), "--seed", "1", "--backend", "inprocess", "--client-dp-epsilon", "8",
            "--ledger", str(tmp_path / "ledger.json")]
    out = tmp_path / "run"
    assert main([*args, "--out", str(out)]) == 0
    rec = read_json(out / "result.json")
    assert rec["client_dp"]["epsilon"] <= 8 and np.isfinite(rec["score"])
    rels = Ledger.open(tmp_path / "ledger.json").data["releases"]
    assert [r["status"] for r in rels] == ["committed", "committed"] and {r["n_examples"] for r in rels} == {20}
    assert all(r["guarantee"] == "dp" and r["events"][0]["kind"] == "poisson-gaussian" for r in rels)
    c0 = rec["client_dp"]["clients"][0]
    assert compose_events(rels[0]["events"], c0["delta"]) == pytest.approx(c0["epsilon"], rel=0.05)
    # a second run of the same shards does not fit a budget of epsilon 10: refused before any work
    Ledger.open(tmp_path / "ledger.json").set_budget(epsilon=10.0, delta=None, eta=None)
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "again")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "--seed" not in line]
    assert len(err) == 1 and "budget" in err[0] and not (tmp_path / "again").exists()
    assert len(Ledger.open(tmp_path / "ledger.json").data["releases"]) == 2


def test_report_table_sets_each_epsilon_beside_the_non_private_run():
    from privnlu.report import section_markdown

    settings = dict(task="sst2", clients=4, rounds=10, batch_size=8, hidden="16", lr=0.01, clip=0.1, train_limit=0,
                    eval_every=5, seed=0)
    cdp = {"target_epsilon": 3.0, "epsilon": 2.99, "delta": 1e-5,
           "clients": [{"noise_multiplier": 0.8}, {"noise_multiplier": 0.81}]}
    recs = [{"kind": "federated_client_dp", "settings": {**settings, "epsilon": 3.0}, "label": "dp", "score": 70.0,
             "best_score": 71.0, "client_dp": cdp},
            {"kind": "federated_client_dp", "settings": {**settings, "epsilon": 0.0}, "label": "plain", "score": 75.0,
             "best_score": 75.5}]
    md = section_markdown("federated_client_dp", recs)
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    assert lines[1].startswith("| dp | 3") and "0.8 to 0.81" in lines[1] and "| -5" in lines[1]
    assert lines[2].startswith("| plain | - (no DP)")
