"""Client-level DP-FedSGD by wrapping the strategy: clipping bound, noise scale, accounting, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from flwr.app import Message, MetricRecord, RecordDict
from scipy import stats

from federated_helpers import InProcessGrid
from privnlu.errors import PrivnluError
from privnlu.federated import FederatedConfig
from privnlu.federated.strategy import TextHideFedSGD
from privnlu.federated.client import make_client_app
from privnlu.federated.dp import DPFedSGD, clip_gradient
from privnlu.mechanisms.dp_fedsgd import epsilon_spent, noise_multiplier_for
from privnlu.federated.model import record_to_tensors, tensors_to_record
from privnlu.federated.server import run_server
from privnlu.federated.strategy import FedAvgTextHide
from privnlu.rng import SecretGenerator


pytestmark = pytest.mark.usefixtures("flower_task_identity")


def _reply(grads: dict, b: int, node: int) -> Message:
    content = RecordDict({"gradients": tensors_to_record(grads), "metrics": MetricRecord({"num-examples": b, "train-loss": 0.5})})
    return Message(content=content, dst_node_id=node, message_type="train")


def _fedsgd(shapes: dict, lr: float = 1.0) -> TextHideFedSGD:
    return TextHideFedSGD(initial={n: torch.zeros(s) for n, s in shapes.items()}, lr=lr, optimizer="sgd")


def test_clipping_bounds_each_client_gradient_jointly():
    g = torch.Generator().manual_seed(0)
    grads = {"a": 3 * torch.randn(5, 4, generator=g), "b": torch.randn(7, generator=g)}
    clipped, norm = clip_gradient(grads, 0.5)
    joint = math.sqrt(sum(float((v ** 2).sum()) for v in clipped.values()))
    assert norm > 0.5 and joint == pytest.approx(0.5, rel=1e-5)
    for n in grads:  # the direction is kept: one common scale factor
        torch.testing.assert_close(clipped[n], grads[n] * (0.5 / norm))
    small = {n: v * (0.1 / norm) for n, v in grads.items()}  # norm 0.1 <= C: untouched
    kept, _ = clip_gradient(small, 0.5)
    for n in small:
        torch.testing.assert_close(kept[n], small[n])


def test_the_server_step_is_the_clipped_sum_plus_the_generators_noise_over_n():
    """With SGD lr 1 from W = 0, the new model is -(sum_c clip(g_c) + z C xi) / n, xi ~ the SecretGenerator's normals."""
    shapes = {"head.w": (3, 4), "head.b": (3,)}
    g = torch.Generator().manual_seed(1)
    grads = [{n: 10 * torch.randn(s, generator=g) for n, s in shapes.items()} for _ in range(3)]
    z, C, n = 0.7, 1.5, 4  # one of the 4 sampled clients dropped: the denominator stays 4
    dp = DPFedSGD(_fedsgd(shapes), noise_multiplier=z, clipping_norm=C, num_sampled_clients=n, delta=1e-5,
                  rng=SecretGenerator(42, warn=False))
    new, metrics = dp.aggregate_train(1, [_reply(gr, 8, i) for i, gr in enumerate(grads)])
    twin = SecretGenerator(42, warn=False)
    got = record_to_tensors(new)
    assert all(v > C for v in dp.last_norms)
    for name, shape in shapes.items():
        clipped_sum = sum(clip_gradient(gr, C)[0][name].double() for gr in grads)
        expected = -(clipped_sum + twin.normal(shape, dtype=torch.float64) * z * C) / n
        torch.testing.assert_close(got[name].double(), expected, atol=1e-5, rtol=1e-5)
    assert dp.releases == 1 and float(metrics["train-loss"]) == pytest.approx(0.5)


def test_noise_has_the_calibrated_scale():
    """Zero gradients: the released mean is pure noise, N(0, (z C / n)^2) per coordinate. 40,000 draws, seed 7:
    sample std within 2% (about 4 standard errors), mean within 4 standard errors, KS test p > 0.001."""
    z, C, n = 1.3, 2.0, 5
    shapes = {"head.w": (200, 200)}
    dp = DPFedSGD(_fedsgd(shapes), noise_multiplier=z, clipping_norm=C, num_sampled_clients=n, delta=1e-5,
                  rng=SecretGenerator(7, warn=False))
    mean = dp.noisy_mean([{"head.w": torch.zeros(200, 200)} for _ in range(n)])["head.w"].double().flatten()
    sigma = z * C / n
    assert float(mean.std()) == pytest.approx(sigma, rel=0.02)
    assert abs(float(mean.mean())) < 4 * sigma / math.sqrt(mean.numel())
    assert stats.kstest(mean.numpy() / sigma, "norm").pvalue > 1e-3
    # and a wrong scale would be caught: the same draws scaled by 1.1 fail the std check
    assert float((1.1 * mean).std()) != pytest.approx(sigma, rel=0.02)


def test_accounting_matches_the_calibration():
    z = noise_multiplier_for(2.0, 1e-5, 50)
    assert epsilon_spent(z, 50, 1e-5) == pytest.approx(2.0, rel=0.02)
    assert epsilon_spent(z, 10, 1e-5) < epsilon_spent(z, 50, 1e-5) < epsilon_spent(z, 200, 1e-5)
    assert epsilon_spent(z, 0, 1e-5) == 0.0


@pytest.mark.parametrize("kw,msg", [
    (dict(noise_multiplier=0.0), "noise multiplier must be > 0"),
    (dict(clipping_norm=-1.0), "clipping norm must be > 0"),
    (dict(clipping_norm=float("nan")), "clipping norm must be > 0"),
    (dict(delta=1.0), "delta must be in"),
    (dict(num_sampled_clients=0), "sampled clients"),
])
def test_wrapper_validates_its_arguments_up_front(kw, msg):
    args = dict(noise_multiplier=1.0, clipping_norm=1.0, num_sampled_clients=2, delta=1e-5, **{})
    args.update(kw)
    with pytest.raises(PrivnluError, match=msg):
        DPFedSGD(_fedsgd({"head.b": (2,)}), **args)
    with pytest.raises(PrivnluError, match="wraps a FedSGD strategy"):
        DPFedSGD(FedAvgTextHide(), noise_multiplier=1.0, clipping_norm=1.0, num_sampled_clients=2, delta=1e-5)


def test_dp_run_end_to_end_records_its_guarantee_and_resumes_only_with_the_same_noise(tiny_model, tmp_path):
    base = dict(task="tweets", model=str(tiny_model), clients=2, rounds=2, m="4", k=2, batch_size=8, train_limit=80,
                dev_limit=40, cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0, checkpoint_every=1,
                dp_clip=1.0, dp_epsilon=4.0)
    cfg = FederatedConfig(**base)
    rec = run_server(InProcessGrid(make_client_app(cfg), 2), cfg, out=tmp_path / "run")
    assert rec["dp"]["releases"] == 2 and rec["dp"]["epsilon"] == pytest.approx(4.0, rel=0.02)
    assert rec["history"][0]["dp_epsilon"] < rec["history"][1]["dp_epsilon"]
    # --dp-epsilon calibrates z for --rounds: more rounds => another z, which a resume must refuse
    more = FederatedConfig(**{**base, "rounds": 3})
    with pytest.raises(PrivnluError, match="other DP settings"):
        run_server(InProcessGrid(make_client_app(more), 2), more, out=tmp_path / "run", resume=True)


def test_seeded_dp_run_resumes_with_the_same_noise_stream(tiny_model, tmp_path):
    """The checkpoint (mode 0600) carries a seeded run's noise position: interrupted + resumed == uninterrupted."""
    import os
    import stat

    base = dict(task="tweets", model=str(tiny_model), clients=2, m="4", k=2, batch_size=8, train_limit=80, dev_limit=40,
                cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0, checkpoint_every=1, dp_clip=1.0,
                dp_noise=1.0)
    full_cfg, part_cfg = FederatedConfig(**base, rounds=3), FederatedConfig(**base, rounds=1)
    run_server(InProcessGrid(make_client_app(full_cfg), 2), full_cfg, out=tmp_path / "full")
    run_server(InProcessGrid(make_client_app(part_cfg), 2), part_cfg, out=tmp_path / "part")
    run_server(InProcessGrid(make_client_app(full_cfg), 2), full_cfg, out=tmp_path / "part", resume=True)
    from privnlu.models.checkpoint import read as read_checkpoint

    (a, sa), (b, sb) = (read_checkpoint(tmp_path / d / "checkpoint.pt", "params") for d in ("full", "part"))
    assert sa["strategy"]["dp_noise_state"] == sb["strategy"]["dp_noise_state"] is not None
    for n in a:
        torch.testing.assert_close(a[n], b[n], atol=1e-6, rtol=1e-5)
    for f in ("checkpoint.safetensors", "checkpoint.json"):
        assert stat.S_IMODE(os.stat(tmp_path / "part" / f).st_mode) == 0o600


def test_the_secure_generator_has_no_state_to_checkpoint():
    assert SecretGenerator().experiment_state() is None
    g = SecretGenerator(5, warn=False)
    state = g.experiment_state()
    first = g.words(4)
    g.restore_experiment_state(state)
    assert (g.words(4) == first).all()


@pytest.mark.parametrize("extra,msg", [
    (["--dp-clip", "1"], "exactly one of --dp-noise-multiplier or --dp-epsilon"),
    (["--dp-noise-multiplier", "1"], "need --dp-clip"),
    (["--dp-clip", "-1", "--dp-noise-multiplier", "1"], "--dp-clip: '-1' is out of range"),
    (["--dp-clip", "1", "--dp-epsilon", "-2"], "--dp-epsilon: '-2' is out of range"),
    (["--dp-clip", "1", "--dp-noise-multiplier", "1", "--dp-delta", "2"], "--dp-delta: '2' is out of range"),
    (["--dp-clip", "1", "--dp-noise-multiplier", "1", "--algorithm", "fedavg"], "needs --algorithm fedsgd"),
])
def test_cli_bad_dp_input_is_one_line_exit_2(extra, msg, capsys, tmp_path):
    from privnlu.cli.main import main

    out = tmp_path / "run"
    assert main(["federated", "--task", "tweets", "--rounds", "1", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0] and "Traceback" not in err[0]
    assert not out.exists()
