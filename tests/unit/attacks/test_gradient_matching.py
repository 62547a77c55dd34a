"""Gradient matching (DLG, TextHide Algorithm 3): succeeds undefended, fails against TextHide, works on a wire capture."""

from __future__ import annotations

import inspect

import pytest
import torch

from federated_helpers import InProcessGrid, ensure_task_identity
from privnlu.attacks.gradient.matching import (GradientMatchingAttack, GradientMatchingConfig, HiddenMaskVictim, Trial,
                                               analytic_input, attack_capture, plan, row_key, run_trial, score,
                                               summarize, sweep)
from privnlu.mechanisms.texthide import TextHide
from privnlu.rng import SecretGenerator
from privnlu.training import task_loss
from privnlu.federated import FederatedConfig
from privnlu.federated.wire import WireLog
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
                                                                             "on_step", "fixed_mask"]


def test_attack_recovers_an_undefended_input():
    x, y = features()
    row = run_trial(x, y, Trial(dim=16, k=0, index=3, seed=5, victim="input"))
    assert row["success"] and row["mse"] < 1e-6, row


def test_attack_mostly_recovers_the_undefended_input_of_the_hidden_layer_victim():
    """DLG does not always converge (the paper's baseline: 82%): at least 4 of 5 seeded attacks succeed."""
    x, y = features()
    rows = [run_trial(x, y, Trial(dim=16, k=0, index=3 + s, seed=s), hidden=24) for s in range(5)]
    assert sum(r["success"] for r in rows) >= 4, [r["mse"] for r in rows]


@pytest.mark.parametrize("k", [1, 2])
def test_attack_fails_against_texthide_on_the_input_victim(k):
    """Mask on the attacked variable itself (m = 1): the dummy gradient still matches, but x is not recovered."""
    x, y = features()
    row = run_trial(x, y, Trial(dim=16, k=k, index=3, seed=5, victim="input"))
    assert not row["success"] and row["mse"] > 1e-2, row


def _hidden_victim_gradient(seed=0, d=8, in_dim=32):
    """A k = 1, m = 1 TextHide client on the hidden-layer victim: (model, gradient, label, x, sigma)."""
    x, y = features(dim=in_dim, seed=seed)
    torch.manual_seed(seed)
    model = HiddenMaskVictim(in_dim, d, 2, hidden=24)
    th = TextHide(1, 1, dim=d, rng=SecretGenerator(seed, warn=False))
    xs, ys = x[:1], torch.nn.functional.one_hot(y[:1], 2).float()
    hb = th.hide(model.represent(xs), ys)
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(task_loss(model.logits_of_hidden(hb.x), hb.y, regression=False), list(model.parameters()))
    return model, dict(zip(names, (g.detach() for g in grads))), hb.y.detach(), xs[0], th.pool.masks[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hidden_victim_at_k1_gradients_identify_x_when_the_mask_is_matched(seed):
    """The paper's victim (mask at a hidden layer, after a non-linear layer): with the relaxed mask at the true
    sigma, matching the gradients recovers the input x itself; with a mask that is wrong in one entry the
    gradients cannot be matched. The first layer's gradient alone determines x in closed form."""
    model, grad, label, x, sigma = _hidden_victim_gradient(seed)
    attack = GradientMatchingAttack(model, config=GradientMatchingConfig(seed=seed))
    out = attack.run(grad, label, dim=x.numel(), masked=True, fixed_mask=sigma)
    assert float(((out.recovered - x) ** 2).mean()) < 1e-6 and out.grad_distance < 1e-9, out
    wrong = sigma.clone()
    wrong[0] = -wrong[0]
    bad = attack.run(grad, label, dim=x.numel(), masked=True, fixed_mask=wrong)
    assert bad.grad_distance > 1e3 * max(out.grad_distance, 1e-14), (bad.grad_distance, out.grad_distance)
    closed = analytic_input(grad, "body.0.weight", "body.0.bias")
    assert closed is not None and torch.allclose(closed, x, atol=1e-5)


def test_hidden_victim_rows_record_the_mask_match_and_the_loss_curve():
    x, y = features()
    row = run_trial(x, y, Trial(dim=4, k=1, index=3, seed=5), config=GradientMatchingConfig(iterations=200), hidden=24)
    assert row["victim"] == "hidden" and isinstance(row["mask_matched"], bool) and row["mask_mse"] >= 0
    assert row["mask_matched"] == (row["mask_mse"] <= 1e-3)
    assert row["curve"] and all(len(p) == 4 for p in row["curve"])
    assert [p[0] for p in row["curve"]] == sorted(p[0] for p in row["curve"])
    mix = run_trial(x, y, Trial(dim=4, k=2, index=3, seed=5), config=GradientMatchingConfig(iterations=40), hidden=24)
    assert "mixture_mse" in mix and "mask_mse" in mix


@pytest.mark.parametrize("k,victim", [(0, "input"), (1, "input"), (2, "input"), (1, "hidden"), (2, "hidden")])
def test_stopping_at_the_lbfgs_fixed_point_changes_nothing(k, victim):
    """The early stop (two whole L-BFGS steps that leave x', s' bitwise unchanged) returns bit for bit what
    the full 1,200 iterations return, in fewer iterations."""
    x, y = features()
    tr = Trial(dim=16, k=k, index=7, seed=11, victim=victim)
    full = run_trial(x, y, tr, config=GradientMatchingConfig(stop_at_fixed_point=False), hidden=24)
    early = run_trial(x, y, tr, config=GradientMatchingConfig(), hidden=24)
    for key in ("mse", "success", "encoding_mse", "abs_mse", "grad_distance", "mask_mse", "mask_matched"):
        assert early.get(key) == full.get(key), (key, early, full)
    assert early["iterations"] < full["iterations"] == 1200


def test_a_resumed_sweep_attacks_the_same_examples():
    x, y = features()
    cfg = GradientMatchingConfig(iterations=40)
    kw = dict(dims=[4, 8], ks=[0, 1], trials=2, seed=3, config=cfg, victim="input")
    full = sweep(x, y, **kw)
    first = {row_key(r) for r in full[:3]}
    rest = sweep(x, y, **kw, skip=first)
    def strip(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert strip(full[3:]) == strip(rest) and len(rest) == 5
    p = plan(64, dims=[4, 8], ks=[0, 1], trials=2, seed=3)
    assert p == plan(64, dims=[4, 8], ks=[0, 1], trials=2, seed=3)
    assert len({t.index for t in p[:4]}) == 1  # one example per round, attacked in every (d, k) cell
    assert sweep(x, y, **kw, deadline=0.0) == []


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
    rows = [run_trial(x, y, Trial(dim=4, k=k, index=i, seed=i), config=GradientMatchingConfig(iterations=40), hidden=24)
            for k in (0, 1, 2) for i in range(2)]
    write_json_atomic(tmp_path / "res" / "gm.json", {"kind": "gradient_attack", "source": "sweep", "rows": rows})
    hist = [{"round": r, "eval": {"dev": {"score": 50.0 + r}}} for r in (1, 2)]
    write_json_atomic(tmp_path / "res" / "fed.json", {
        "kind": "federated", "label": "tweets-fedsgd-m6-k2-c3", "task": "tweets", "algorithm": "fedsgd", "mode": "frozen",
        "clients": 3, "rounds": 2, "m": "6", "k": 2, "score": 52.0, "best_score": 52.0, "seconds": 1.0, "history": hist})
    page = build_report([tmp_path / "res"], tmp_path / "report").read_text()
    assert "Federated TextHide on Flower" in page and "tweets-fedsgd-m6-k2-c3" in page
    assert "Gradient-matching attack" in page and (tmp_path / "report" / "gradient_attack_heatmap.png").exists()
    assert "mask matched" in page and (tmp_path / "report" / "gradient_attack_curves.png").exists()


def test_mixing_partners_are_other_data_points():
    """k = 4: the attacked example is mixed with three distinct other examples (never with itself)."""
    from privnlu.attacks.gradient.matching import _client_batch

    x, y = features(n=6)
    for seed in range(20):
        xs, _ = _client_batch(x, y, Trial(dim=4, k=4, index=seed % 6, seed=seed), 2)
        rows = {tuple(r.tolist()) for r in xs}
        assert len(rows) == 4 and torch.equal(xs[0], x[seed % 6])


@pytest.mark.parametrize("extra,msg", [(["--victim", "lenet"], "invalid choice"),
                                       (["--max-minutes", "0"], "out of range")])
def test_cli_sweep_refuses_bad_flags_before_work(tmp_path, capsys, extra, msg):
    from privnlu.cli.main import main

    assert main(["attack", "gradient", *extra, "--out", str(tmp_path / "gm.json")]) == 2
    assert msg in capsys.readouterr().err and not (tmp_path / "gm.json").exists()
