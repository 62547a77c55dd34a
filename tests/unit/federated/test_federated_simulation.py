"""One real run of Flower's Simulation Runtime (Ray backend): wire capture, a crashing client, checkpoint.

Kept to a single run because Ray's start-up dominates (about 20-30 s on 2 cores); the
strategy and client logic are tested without Ray in test_federated.py.
"""

from __future__ import annotations

import sys

import pytest

from privnlu.federated import FederatedConfig
from privnlu.federated.wire import WireLog, load_capture
from privnlu.federated.model import build_model, frozen_encoder
from privnlu.federated.simulation import run_simulation
from test_federated import check_wire


def crash_in_round_2_on_partition_1(msg, context, call_next):
    """A Flower client mod: client 1 crashes in round 2."""
    if (msg.metadata.message_type == "train" and int(context.node_config["partition-id"]) == 1
            and int(msg.content["config"]["server-round"]) == 2):
        raise RuntimeError("simulated client crash")
    return call_next(msg, context)


@pytest.mark.slow
def test_real_flower_simulation_survives_a_crash_and_leaks_no_secret(tmp_path):
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers cannot import tests/
    cfg = FederatedConfig(task="tweets", clients=3, rounds=3, m="6", k=2, batch_size=8, train_limit=120, dev_limit=60,
                          cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0, lr=5e-3, min_clients=2,
                          checkpoint_every=1)
    out = tmp_path / "run"
    rec = run_simulation(cfg, out=out, wire=WireLog(), client_mods=(crash_in_round_2_on_partition_1,), num_cpus=2)
    assert rec["kind"] == "federated" and [h["round"] for h in rec["history"]] == [1, 2, 3]
    assert (out / "result.json").exists() and (out / "checkpoint.safetensors").exists()
    log = load_capture(out / "wire.safetensors")  # what the server received, as saved on disk
    errors = [e for e in log.received if "error" in e]
    assert len(errors) == 1 and errors[0]["round"] == 2 and "simulated client crash" in errors[0]["error"]
    assert len([e for e in log.received if "error" not in e and e["type"] == "train"]) == 8
    enc = frozen_encoder("", "cls")
    raw_cos, mask_cos = check_wire(log, cfg, enc, set(build_model(cfg, enc).named_parameters()))
    assert raw_cos < 0.95 and mask_cos < 0.5, (raw_cos, mask_cos)
