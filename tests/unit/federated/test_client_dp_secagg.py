"""Client-side DP-SGD inside Flower's SecAgg+: the clients noise their own gradients before SecAgg+ masks them, the
server sees only the aggregate of the noisy gradients, and the record and the owner's ledger state each client's
sample-level epsilon; joint mode (SecAgg+ by default) end to end."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from federated_helpers import InProcessGrid
from privnlu.federated import FederatedConfig
from privnlu.federated.client import make_client_app
from privnlu.federated.secagg_plus import CLIPPING_RANGE, QUANTIZATION_RANGE, SERVER_NODE
from privnlu.federated.server import run_server
from privnlu.federated.wire import WireLog, load_capture


pytestmark = pytest.mark.usefixtures("flower_task_identity")


def make_cfg(tiny_model, tmp_path, **kw) -> FederatedConfig:
    base = dict(task="tweets", model=str(tiny_model), clients=2, rounds=1, scheme="none", m="0", k=1, batch_size=8,
                train_limit=48, dev_limit=16, cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0, lr=5e-3,
                eval_mask="none", server_optimizer="sgd", client_dp_epsilon=3.0)
    base.update(kw)
    return FederatedConfig(**base)


def check_only_the_aggregate(plain_log: WireLog, sec_log: WireLog, path, clients: int, batch: int) -> None:
    """The SecAgg+ capture holds one received entry per round, from the server's node: the mean of the clients'
    noisy DP-SGD gradients (the plain run's, same seeds) within SecAgg+'s quantization, equal to none of them."""
    cap = load_capture(sec_log.save(path))
    assert [e["node_id"] for e in cap.received] == [SERVER_NODE]
    entry = cap.received[0]
    assert entry["configs"]["secagg"]["aggregate-of"] == clients
    assert entry["metrics"]["metrics"]["num-examples"] == clients * batch  # expected batches (public) only
    assert "train-loss" not in entry["metrics"]["metrics"]
    plain = [e for e in plain_log.received if e["round"] == 1 and e["type"] == "train"]
    assert len(plain) == clients
    agg = entry["arrays"]["gradients"]
    assert set(agg) == set(plain[0]["arrays"]["gradients"])
    tol = 2 * CLIPPING_RANGE / QUANTIZATION_RANGE + 1e-7
    for name, g in agg.items():
        mean = sum(np.asarray(e["arrays"]["gradients"][name], dtype=np.float64) for e in plain) / clients
        np.testing.assert_allclose(g, mean, atol=tol)
    client_grads = [np.asarray(v) for e in plain for v in e["arrays"]["gradients"].values()]
    for arr in agg.values():
        if np.abs(arr).max() > 10 * tol:  # (an all-zero array, e.g. an unreached pooler, equals everyone's)
            assert not any(arr.shape == g.shape and np.allclose(arr, g, atol=1e-6) for g in client_grads)


@pytest.mark.parametrize("mode", ["frozen", "joint"])
def test_client_dp_sgd_inside_secagg_plus_the_server_sees_only_the_noisy_aggregate(tiny_model, tmp_path, mode,
                                                                                     monkeypatch):
    import torch

    from privnlu.federated.client import _encoder

    plain_cfg = make_cfg(tiny_model, tmp_path, mode=mode, unprotected=mode == "joint")
    sec_cfg = make_cfg(tiny_model, tmp_path, mode=mode, secagg=True)
    for m in _encoder(sec_cfg).modules():  # the same messages in both runs: no random dropout in the encoder
        if isinstance(m, torch.nn.Dropout):
            monkeypatch.setattr(m, "p", 0.0)
    plain_log, sec_log = WireLog(), WireLog()
    plain = run_server(InProcessGrid(make_client_app(plain_cfg), 2), plain_cfg, out=None, wire=plain_log)
    rec = run_server(InProcessGrid(make_client_app(sec_cfg), 2), sec_cfg, out=None, wire=sec_log)
    # (a) the round completes through SecAgg+ and nothing was clipped by its range
    assert rec["history"][0]["secagg"] == {"clients": 2, "dropped": 0, "clipped-fraction": pytest.approx(0, abs=1e-6)}
    assert np.isfinite(rec["score"]) and np.isfinite(plain["score"])
    # (b) the server and the wire get the aggregate of the noisy gradients only
    check_only_the_aggregate(plain_log, sec_log, tmp_path / "wire.safetensors", 2, 8)
    # (c) the record states each client's sample-level guarantee, the same with and without SecAgg+
    cdp = rec["client_dp"]
    assert cdp["unit"] == "example" and cdp["target_epsilon"] == 3.0 and 2.9 <= cdp["epsilon"] <= 3.0
    assert [c["n"] for c in cdp["clients"]] == [24, 24] and all(c["steps"] == 1 for c in cdp["clients"])
    assert cdp == plain["client_dp"] and "per example" in rec["guarantee"]


def test_the_noise_is_in_the_aggregate(tiny_model, tmp_path, monkeypatch):
    """The same SecAgg+ round at epsilon 3 and with the clients' noise off (same samples) differs by the mean of two
    clients' Gaussian noise: std z C / (B sqrt(2)) per coordinate (within 10% over >= 1000 coordinates)."""
    from dataclasses import replace

    from privnlu.federated.client_dp import ClientDPRound, plan_client

    cfg = make_cfg(tiny_model, tmp_path, hidden="32", secagg=True, client_dp_clip=0.5)
    logs = {True: WireLog(), False: WireLog()}
    run_server(InProcessGrid(make_client_app(cfg), 2), cfg, out=None, wire=logs[True])
    init = ClientDPRound.__init__

    def noiseless(self, *a, **k):
        init(self, *a, **k)
        self.plan = replace(self.plan, noise_multiplier=0.0)

    monkeypatch.setattr(ClientDPRound, "__init__", noiseless)
    run_server(InProcessGrid(make_client_app(cfg), 2), cfg, out=None, wire=logs[False])
    agg = {k: log.received[0]["arrays"]["gradients"] for k, log in logs.items()}
    diff = np.concatenate([(np.asarray(agg[True][n], np.float64) - agg[False][n]).ravel() for n in agg[True]])
    assert diff.size >= 1000
    z = plan_client(cfg, 0, 24).noise_multiplier
    assert float(diff.std()) == pytest.approx(z * 0.5 / (8 * np.sqrt(2)), rel=0.1)


def test_cli_joint_mode_client_dp_sgd_with_secagg_plus_records_each_shard_in_the_ledger(tiny_model, tmp_path):
    """``privnlu federated --mode joint --client-dp-epsilon 8`` (SecAgg+ on by default): the run completes, the
    record says SecAgg+ summed every round and each client's epsilon; the ledger holds one committed release per
    shard with its Poisson-subsampled Gaussian steps."""
    from privnlu.cli.main import main
    from privnlu.io import read_json
    from privnlu.schemes.ledger import Ledger, compose_events

    out = tmp_path / "run"
    args = ["federated", "--task", "tweets", "--model", str(tiny_model), "--mode", "joint", "--scheme", "none",
            "--clients", "2", "--rounds", "1", "--batch-size", "4", "--train-limit", "32", "--dev-limit", "16",
            "--cache-dir", str(tmp_path / "c"), "--seed", "1", "--backend", "inprocess", "--client-dp-epsilon", "8",
            "--ledger", str(tmp_path / "ledger.json"), "--record-wire", "1", "--out", str(out)]
    assert main(args) == 0
    rec = read_json(out / "result.json")
    assert [h["secagg"]["clients"] for h in rec["history"]] == [2]
    assert rec["client_dp"]["epsilon"] <= 8 and np.isfinite(rec["score"])
    assert all(c["steps"] == 1 and c["n"] == 16 for c in rec["client_dp"]["clients"])
    cap = load_capture(out / "wire.safetensors")
    assert [e["node_id"] for e in cap.received] == [SERVER_NODE]
    rels = Ledger.open(tmp_path / "ledger.json").data["releases"]
    assert [r["status"] for r in rels] == ["committed", "committed"] and {r["n_examples"] for r in rels} == {16}
    assert all(r["guarantee"] == "dp" and r["events"][0]["kind"] == "poisson-gaussian" for r in rels)
    for rel, c in zip(rels, rec["client_dp"]["clients"]):
        assert rel["events"][0]["count"] == 1
        assert compose_events(rel["events"], c["delta"]) == pytest.approx(c["epsilon"], rel=0.05)


@pytest.mark.slow
def test_client_dp_sgd_inside_secagg_plus_in_flower_simulation(tiny_model, tmp_path):
    """The same round in Flower's simulation engine (Ray): it completes and the capture holds only the aggregate."""
    import ray.cloudpickle

    from privnlu.federated.simulation import run_simulation

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cfg = make_cfg(tiny_model, tmp_path, secagg=True)
    rec = run_simulation(cfg, out=tmp_path / "run", wire=WireLog(), num_cpus=2)
    assert rec["history"][0]["secagg"]["clients"] == 2 and 2.9 <= rec["client_dp"]["epsilon"] <= 3.0
    cap = load_capture(tmp_path / "run" / "wire.safetensors")
    assert [e["node_id"] for e in cap.received] == [SERVER_NODE]
    assert cap.received[0]["configs"]["secagg"]["aggregate-of"] == 2
