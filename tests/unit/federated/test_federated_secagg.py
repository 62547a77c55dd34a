"""Secure aggregation with Flower's SecAgg+: the same model as plain FedSGD (within the quantization error), a
round that survives a client dropping out after sharing its keys, a wire capture holding only the aggregate,
and the same protocol in Flower's simulation engine and in a deployment on localhost."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from federated_helpers import InProcessGrid
from privnlu.errors import PrivnluError
from privnlu.federated import FederatedConfig
from privnlu.federated.client import make_client_app
from privnlu.federated.launch import launch
from privnlu.federated.secagg_plus import (CLIPPING_RANGE, MAX_CLIENTS, QUANTIZATION_RANGE, SERVER_NODE,
                                           clipping_range)
from privnlu.federated.server import run_server
from privnlu.federated.wire import WireLog, load_capture


pytestmark = pytest.mark.usefixtures("flower_task_identity")


def make_cfg(tiny_model, tmp_path, **kw) -> FederatedConfig:
    base = dict(task="tweets", model=str(tiny_model), clients=3, rounds=2, m="6", k=2, batch_size=8, train_limit=96,
                dev_limit=24, cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0, lr=5e-3, eval_mask="none",
                server_optimizer="sgd")
    base.update(kw)
    return FederatedConfig(**base)


def drop_after_share_keys(partition: int, rnd: int):
    """A test-only client mod: client ``partition`` crashes in round ``rnd`` once it has shared its keys, i.e.
    when the server asks for its masked vector (SecAgg+'s stage 2)."""
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage

    def mod(msg, context, call_next):
        configs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
        if (configs is not None and configs.get(Key.STAGE) == Stage.COLLECT_MASKED_VECTORS
                and int(context.node_config["partition-id"]) == partition and int(msg.metadata.group_id) == rnd):
            raise RuntimeError("simulated dropout after share-keys")
        return call_next(msg, context)

    return mod


def sent_model(log: WireLog, rnd: int) -> dict[str, np.ndarray]:
    """The global model the server sent in round ``rnd`` (``W_{rnd-1}``)."""
    return next(e["arrays"]["arrays"] for e in log.sent if e["round"] == rnd and "arrays" in e)


def run_inproc(cfg, out, *, mods=(), wire=None, resume=False):
    grid = InProcessGrid(make_client_app(cfg, mods=mods), cfg.clients)
    return run_server(grid, cfg, out=out, wire=wire, resume=resume)


# -- in-process (no Ray): the protocol itself -----------------------------------------------------------------

def test_secagg_plus_gives_the_plain_fedsgd_model_and_the_capture_holds_only_the_aggregate(tiny_model, tmp_path):
    plain_cfg = make_cfg(tiny_model, tmp_path)
    sec_cfg = make_cfg(tiny_model, tmp_path, secagg=True)
    plain_log, sec_log = WireLog(), WireLog()
    plain = run_inproc(plain_cfg, None, wire=plain_log)
    sec = run_inproc(sec_cfg, None, wire=sec_log)
    # same seed, same batches: W_1 agrees within SecAgg+'s quantization error (per coordinate below 2c/T for
    # full batches, times the SGD learning rate)
    a, b = sent_model(plain_log, 2), sent_model(sec_log, 2)
    assert set(a) == set(b)
    bound = plain_cfg.lr * 2 * CLIPPING_RANGE / QUANTIZATION_RANGE
    diffs = [float(np.abs(a[n].astype(np.float64) - b[n]).max()) for n in a]
    assert max(diffs) <= bound + 1e-7, (max(diffs), bound)
    for hp, hs in zip(plain["history"], sec["history"]):
        assert hs["train_loss"] == pytest.approx(hp["train_loss"], abs=1e-4)
        assert hs["secagg"] == {"clients": 3, "dropped": 0, "clipped-fraction": pytest.approx(0.0, abs=1e-6)}
    # the capture: per round the model sent to each client, and one received entry, the server's aggregate
    sec_log.save(tmp_path / "wire.safetensors")
    cap = load_capture(tmp_path / "wire.safetensors")
    assert [e["node_id"] for e in cap.received] == [SERVER_NODE, SERVER_NODE]
    for e in cap.received:
        assert e["configs"]["secagg"]["aggregate-of"] == 3 and e["configs"]["secagg"]["nodes"] == [100, 101, 102]
        assert e["metrics"]["metrics"]["num-examples"] == 3 * plain_cfg.batch_size
        assert set(e["arrays"]) == {"gradients"}
    # round 1: the aggregate equals the batch-weighted mean of the plain run's client gradients
    plain_r1 = [e for e in plain_log.received if e["round"] == 1 and e["type"] == "train"]
    assert len(plain_r1) == 3
    agg = cap.received[0]["arrays"]["gradients"]
    for name, g in agg.items():
        mean = sum(np.asarray(e["arrays"]["gradients"][name], dtype=np.float64) for e in plain_r1) / 3
        np.testing.assert_allclose(g, mean, atol=2 * CLIPPING_RANGE / QUANTIZATION_RANGE + 1e-7)
    # nothing per client: no entry from a client node, and no array equal to any client's gradient
    client_grads = [np.asarray(v) for e in plain_r1 for v in e["arrays"]["gradients"].values()]
    for e in cap.received:
        for arr in e["arrays"]["gradients"].values():
            assert not any(arr.shape == g.shape and np.allclose(arr, g, atol=1e-6) for g in client_grads)


def test_a_client_dropping_out_after_share_keys_leaves_the_survivors_mean(tiny_model, tmp_path):
    cfg = make_cfg(tiny_model, tmp_path, secagg=True, rounds=1)
    log = WireLog()
    with pytest.warns(RuntimeWarning, match="1 of 3 clients dropped out"):
        rec = run_inproc(cfg, None, mods=(drop_after_share_keys(1, 1),), wire=log)
    h = rec["history"][0]
    assert h["secagg"]["clients"] == 2 and h["secagg"]["dropped"] == 1
    agg = [e for e in log.received if e["type"] == "train"]
    assert len(agg) == 1 and agg[0]["configs"]["secagg"]["nodes"] == [100, 102]
    # the survivors' mean, computed from their plain gradients of the same round
    plain_cfg = make_cfg(tiny_model, tmp_path, rounds=1)
    plain_log = WireLog()
    run_inproc(plain_cfg, None, wire=plain_log)
    surv = [e for e in plain_log.received if e["type"] == "train" and e["node_id"] in (100, 102)]
    for name, g in agg[0]["arrays"]["gradients"].items():
        mean = sum(np.asarray(e["arrays"]["gradients"][name], dtype=np.float64) for e in surv) / 2
        np.testing.assert_allclose(g, mean, atol=3 * CLIPPING_RANGE / QUANTIZATION_RANGE + 1e-7)


def test_the_aggregate_is_what_attacks_read_and_it_still_leaks_the_union_of_tokens(tiny_model, tmp_path):
    """Joint mode with trained embedding tables: the one gradient entry of the capture is the aggregate, and its
    word-table rows are the union of the clients' tokens (SecAgg+ hides each client, not the sum)."""
    from privnlu.attacks.gradient.embedding_leak import read_token_set, score_tokens
    from privnlu.federated.client import replay_batch

    cfg = make_cfg(tiny_model, tmp_path, secagg=True, rounds=1, mode="joint", train_embeddings=True, m="3", k=2,
                   batch_size=4, train_limit=24, dev_limit=8, encoder_lr=1e-2)
    log = WireLog()
    run_inproc(cfg, None, wire=log)
    entries = [e for e in log.received if e["type"] == "train"]
    assert len(entries) == 1 and entries[0]["node_id"] == SERVER_NODE
    grads = entries[0]["arrays"]["gradients"]
    word = next(n for n in grads if n.endswith("word_embeddings.weight"))
    union = {i for part in range(3) for row in replay_batch(cfg, part, 1)[1] for i in row}
    leak = read_token_set({word: grads[word]})
    assert score_tokens(leak.token_ids, union) == {"recovered": len(union), "true": len(union), "precision": 1.0,
                                                  "recall": 1.0}


def test_a_secagg_run_checkpoints_and_resumes(tiny_model, tmp_path):
    run_inproc(make_cfg(tiny_model, tmp_path, secagg=True, rounds=1), tmp_path / "run")
    rec = run_inproc(make_cfg(tiny_model, tmp_path, secagg=True, rounds=2), tmp_path / "run", resume=True)
    assert [h["round"] for h in rec["history"]] == [1, 2]
    assert [h["secagg"]["clients"] for h in rec["history"]] == [3, 3]


def test_too_large_gradients_are_reported_as_clipped(tiny_model, tmp_path):
    from privnlu.federated import secagg_plus

    cfg = make_cfg(tiny_model, tmp_path, secagg=True, rounds=1)
    grid = InProcessGrid(make_client_app(cfg), cfg.clients)
    old = secagg_plus.CLIPPING_RANGE
    try:
        secagg_plus.CLIPPING_RANGE = 1e-6  # far below the gradients: the secure sum says how much was clipped
        with pytest.warns(RuntimeWarning, match="clipped"):
            rec = run_server(grid, cfg, out=None)
    finally:
        secagg_plus.CLIPPING_RANGE = old
    assert rec["history"][0]["secagg"]["clipped-fraction"] > 0.1


def test_secagg_settings():
    assert clipping_range() == CLIPPING_RANGE
    assert clipping_range(local_clip=4.0, local_noise=1.0) == 28.0
    assert MAX_CLIENTS * QUANTIZATION_RANGE < 2 ** 32
    cfg = FederatedConfig(task="tweets", m="1", k=1, clients=1, secagg=True, batch_size=8)
    with pytest.raises(PrivnluError, match="between 2 and"):
        launch(cfg, backend="inprocess")


# -- Flower's simulation engine and a deployment on localhost ---------------------------------------------------

@pytest.mark.slow
def test_secagg_plus_in_flower_simulation_with_a_dropout(tiny_model, tmp_path):
    import ray.cloudpickle

    from privnlu.federated.simulation import run_simulation

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers cannot import tests/
    cfg = make_cfg(tiny_model, tmp_path, secagg=True, rounds=2)
    t0 = time.time()
    rec = run_simulation(cfg, out=tmp_path / "run", wire=WireLog(), client_mods=(drop_after_share_keys(2, 2),),
                         num_cpus=2)
    print(f"simulation: {time.time() - t0:.1f}s")
    assert [h["secagg"]["clients"] for h in rec["history"]] == [3, 2]
    cap = load_capture(tmp_path / "run" / "wire.safetensors")
    assert [e["node_id"] for e in cap.received] == [SERVER_NODE, SERVER_NODE]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_secagg_plus_deployed_on_localhost_with_a_dropout(tiny_model, tmp_path, monkeypatch):
    """flower-superlink and three flower-supernode processes; client 1 drops out of round 1 after sharing keys
    (the app's ClientApp is a test module in the app folder, wrapping privnlu's with the dropout mod)."""
    from privnlu.federated.deploy import deploy

    bindir = Path(sys.executable).parent
    if not (bindir / "flower-superlink").exists():
        pytest.skip("flower-superlink not installed")
    port = _free_port()  # the SuperLink's HTTP API (Fleet, Control and ServerAppIo)
    cfg = make_cfg(tiny_model, tmp_path, secagg=True, rounds=2)
    app = tmp_path / "app"
    app.mkdir()
    (app / "secagg_dropout_app.py").write_text(
        "from privnlu.federated.client import make_client_app\n"
        "from test_federated_secagg import drop_after_share_keys\n"
        "client_app = make_client_app(mods=(drop_after_share_keys(1, 1),))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(Path(__file__).parents[2]), str(app),
                                                         os.environ.get("PYTHONPATH", "")]),
           "FLWR_HOME": str(tmp_path / "flwr_home"), "OMP_NUM_THREADS": "1",
           "PATH": os.pathsep.join([str(bindir), os.environ.get("PATH", "")])}  # flower-superexec
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name: str, *args: str) -> subprocess.Popen:
        f = open(logs / f"{name}.log", "wb")
        return subprocess.Popen([str(bindir / args[0]), *args[1:]], env=env, stdout=f, stderr=subprocess.STDOUT)

    procs = [start("superlink", "flower-superlink", "--insecure", "--disable-runtime-dependency-installation",
                   "--host", "127.0.0.1", "--port", str(port))]
    try:
        time.sleep(3)
        for i in range(3):
            procs.append(start(f"supernode{i}", "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{port}",
                               "--node-config", f"partition-id={i} num-partitions=3", "--port", str(_free_port())))
        t0 = time.time()
        monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])  # `flwr run` and what it starts
        deploy(cfg, out=tmp_path / "run", superlink=f"127.0.0.1:{port}", app_dir=app, resume=False,
               record_wire=2, round_timeout=120.0, clientapp="secagg_dropout_app:client_app")
        deadline = time.time() + 300
        while not (tmp_path / "run" / "result.json").exists() and time.time() < deadline:
            time.sleep(1)
        print(f"deployment: {time.time() - t0:.1f}s")
        from privnlu.io import read_json

        assert (tmp_path / "run" / "result.json").exists(), [(f.name, f.read_text()[-2000:]) for f in logs.iterdir()]
        rec = read_json(tmp_path / "run" / "result.json")
        assert [h["secagg"]["clients"] for h in rec["history"]] == [2, 3]
        cap = load_capture(tmp_path / "run" / "wire.safetensors")
        assert [e["node_id"] for e in cap.received] == [SERVER_NODE, SERVER_NODE]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
