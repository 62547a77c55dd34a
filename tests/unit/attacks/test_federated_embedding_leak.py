"""The embedding-gradient leak in federated joint mode, its detector, attack and defences.

Tiny random-init BERT (bert-base-uncased vocabulary): the leak is structural (a lookup table's gradient is
non-zero exactly in the rows of the batch's ids), so no pretrained weights are needed to show or stop it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from flwr.app import RecordDict

from federated_helpers import InProcessGrid, token_row_leaks
from privnlu.attacks.gradient.embedding_leak import (EMBEDDING_LEAK_THREAT, EmbeddingLeakAttack, read_token_set,
                                                     score_sentences, score_tokens)
from privnlu.attacks.threat import AttackerView
from privnlu.errors import PrivnluError
from privnlu.federated import FederatedConfig
from privnlu.federated.wire import WireLog, load_capture
from privnlu.federated.client import _client_data, client_update, make_client_app, replay_batch
from privnlu.federated.data import load_train, shard_indices
from privnlu.federated.model import build_model, embedding_tables
from privnlu.federated.secagg import deal_pair_seeds
from privnlu.federated.server import run_server
from privnlu.models import load_encoder


pytestmark = pytest.mark.usefixtures("flower_task_identity")


def joint_cfg(tiny_model, tmp_path, **kw) -> FederatedConfig:
    base = dict(task="tweets", model=str(tiny_model), clients=2, rounds=1, m="2", k=2, batch_size=4, mode="joint",
                train_limit=24, dev_limit=8, cache_dir=str(tmp_path / "cache"), seed=5, dropout=0.0,
                eval_mask="none", encoder_lr=1e-2)
    base.update(kw)
    return FederatedConfig(**base)


def shard_token_ids(cfg: FederatedConfig, partition: int) -> set[int]:
    """Every token id in a client's shard (the detector's reference: the client's vocabulary)."""
    tok = _client_data(cfg, partition).tokens
    return set(tok["input_ids"][tok["attention_mask"].bool()].tolist())


def run_joint(cfg: FederatedConfig, secagg: bool = False) -> tuple[WireLog, dict]:
    log = WireLog()
    grid = InProcessGrid(make_client_app(cfg), cfg.clients)
    if secagg:
        deal_pair_seeds(list(grid.contexts), {n: c.state for n, c in grid.contexts.items()})
    rec = run_server(grid, cfg, out=None, wire=log)
    return log, rec


def train_replies(log: WireLog) -> list[dict]:
    return [e for e in log.received if e["type"] == "train" and "error" not in e]


# -- the detector, the old behaviour and the default ------------------------------------------------------

def test_detector_fires_on_the_old_behaviour_and_the_attack_reads_every_clients_words(tiny_model, tmp_path):
    cfg = joint_cfg(tiny_model, tmp_path, train_embeddings=True)
    log, _ = run_joint(cfg)
    replies = train_replies(log)
    assert len(replies) == 2
    view = AttackerView(EMBEDDING_LEAK_THREAT, encoder=load_encoder(tiny_model))
    for e in replies:
        part = e["node_id"] - 100
        grads = e["arrays"]["gradients"]
        assert any(n.endswith("word_embeddings.weight") for n in grads)
        hits = token_row_leaks(grads, shard_token_ids(cfg, part))
        assert any(h.endswith("word_embeddings.weight") for h in hits), hits
        # the attacker, from the message alone, gets exactly the batch's token set (auditor scores with the truth)
        out = EmbeddingLeakAttack().run(grads, view, batch_size=int(e["metrics"]["metrics"]["num-examples"]))
        _, true = replay_batch(cfg, part, 1)
        sc = score_tokens(out["token_ids"], {i for row in true for i in row})
        assert sc["precision"] == 1.0 and sc["recall"] == 1.0, sc
        assert out["length"] == max(len(r) for r in true)


def test_default_joint_mode_sends_no_embedding_table_and_still_finetunes_the_encoder(tiny_model, tmp_path):
    cfg = joint_cfg(tiny_model, tmp_path)
    assert not cfg.train_embeddings
    log, rec = run_joint(cfg)
    replies = train_replies(log)
    assert len(replies) == 2 and rec["train_embeddings"] is False
    for e in replies:
        grads = e["arrays"]["gradients"]
        assert not any("embeddings.weight" in n and "LayerNorm" not in n for n in grads), sorted(grads)
        assert token_row_leaks(grads, shard_token_ids(cfg, e["node_id"] - 100)) == []
        assert read_token_set(grads) is None
        assert any(np.abs(grads[n]).max() > 0 for n in grads if n.startswith("encoder.model.encoder.layer.0"))
    sent = [e["arrays"]["arrays"] for e in log.sent if "arrays" in e]
    assert not any("word_embeddings" in n for n in sent[0])


def test_the_auditor_runs_the_span_test_on_default_messages(tiny_model, tmp_path):
    from privnlu.attacks.gradient.embedding_leak import audit_capture

    cfg = joint_cfg(tiny_model, tmp_path, batch_size=1, k=1)
    log, _ = run_joint(cfg)
    rows = audit_capture(log, load_encoder(tiny_model), truth_cfg=cfg, span=True)
    assert len(rows) == 2
    for r in rows:
        assert not r["embedding_gradient"] and 0 < r["span"]["rank"] <= 32  # the tiny model is 32 wide
        assert {"precision", "recall", "precision_at_true_count"} <= set(r["span"]) and r["true_sentences"]


def test_freezing_is_per_federated_model_and_leaves_centralized_encoders_trainable(tiny_model, tmp_path):
    enc = load_encoder(tiny_model)
    build_model(joint_cfg(tiny_model, tmp_path), enc)
    tables = embedding_tables(enc)
    assert {n.split(".")[-2] for n in tables} == {"word_embeddings", "position_embeddings", "token_type_embeddings"}
    assert not any(p.requires_grad for p in tables.values())
    assert all(p.requires_grad for n, p in enc.named_parameters() if not any(p is t for t in tables.values()))
    build_model(joint_cfg(tiny_model, tmp_path, train_embeddings=True), enc)  # a cached encoder can be unfrozen
    assert all(p.requires_grad for p in enc.parameters())
    fresh = load_encoder(tiny_model)  # what centralized joint training loads: untouched
    assert all(p.requires_grad for p in fresh.parameters())


def test_train_embeddings_is_joint_only_and_the_cli_warns_about_the_leak(tiny_model, tmp_path, capsys):
    from privnlu.cli.main import main

    with pytest.raises(PrivnluError, match="joint only"):
        FederatedConfig(task="tweets", m="2", k=2, train_embeddings=True)
    out = tmp_path / "run"
    args = ["federated", "--task", "tweets", "--model", str(tiny_model), "--clients", "2", "--m", "2", "--k", "2",
            "--batch-size", "4", "--train-limit", "16", "--dev-limit", "8", "--rounds", "1", "--mode", "joint",
            "--eval-mask", "none", "--backend", "inprocess", "--seed", "1", "--record-wire", "1", "--out", str(out)]
    assert main([*args, "--train-embeddings", "--unprotected"]) == 0  # every client's message on the wire
    err = capsys.readouterr().err
    assert "WARNING" in err and "token ids" in err and "eavesdropper" in err
    assert (out / "wire.safetensors").exists() and not (out / "wire.pt").exists()
    # the auditor's CLI: token sets read off each captured message, scored against the replayed batch
    rep = tmp_path / "leak.json"
    assert main(["attack", "gradient", "--wire", str(out / "wire.safetensors"), "--truth", str(out), "--model",
                 str(tiny_model), "--iterations", "5", "--out", str(rep)]) == 0
    from privnlu.io import read_json

    rows = read_json(rep)["token_leak"]
    assert len(rows) == 2 and all(r["precision"] == 1.0 and r["recall"] == 1.0 for r in rows)
    assert all(r["true_sentences"] and r["tokens"] for r in rows)


# -- the wire format ------------------------------------------------------------------------------------

def test_capture_is_safetensors_and_pickles_are_refused(tiny_model, tmp_path, capsys):
    cfg = joint_cfg(tiny_model, tmp_path, train_embeddings=True)
    log, _ = run_joint(cfg)
    path = log.save(tmp_path / "w.safetensors")
    with open(path, "rb") as fh:  # safetensors: an 8-byte header length, then a JSON header
        n = int.from_bytes(fh.read(8), "little")
        assert fh.read(1) == b"{" and n > 0
    back = load_capture(path)
    a, b = train_replies(log)[0], train_replies(back)[0]
    assert a["node_id"] == b["node_id"] and a["metrics"] == b["metrics"]
    for name, arr in a["arrays"]["gradients"].items():
        np.testing.assert_array_equal(arr, b["arrays"]["gradients"][name])
    # a safetensors header length whose low byte is 0x80 (a pickle's first byte) is still a capture
    for pad in range(300):
        small = WireLog(0, [], [{"round": 1, "node_id": 1, "type": "train", "error": "x" * pad}])
        small.save(tmp_path / "pad.safetensors")
        if (tmp_path / "pad.safetensors").read_bytes()[0] == 0x80:
            break
    assert (tmp_path / "pad.safetensors").read_bytes()[0] == 0x80
    assert load_capture(tmp_path / "pad.safetensors").received[0]["error"] == "x" * pad
    torch.save({"format": "privnlu-wire-v1", "sent": [], "received": []}, tmp_path / "old.pt")
    from privnlu.cli.main import main

    capsys.readouterr()  # drop what the run above logged (Flower's warnings), keep only the command's output
    assert main(["attack", "gradient", "--wire", str(tmp_path / "old.pt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pickle" in err[0] and "never unpickles" in err[0]
    import pickle

    (tmp_path / "raw.pkl").write_bytes(pickle.dumps({"format": "privnlu-wire-v2"}))
    with pytest.raises(PrivnluError, match="never unpickles"):
        load_capture(tmp_path / "raw.pkl")


# -- secure aggregation ---------------------------------------------------------------------------------

# Flower's SecAgg+ (--secagg): its sum, dropouts and what the server's capture holds are tested in
# test_federated_secagg.py (including that the aggregate still leaks the union of the clients' tokens).

@pytest.mark.parametrize("kw,msg", [
    (dict(secagg=True, algorithm="fedavg"), "fedsgd"),
    (dict(secagg=True, dp_clip=1.0, dp_noise=1.0), "--secagg hides"),
    (dict(local_noise=1.0), "needs --local-clip"),
])
def test_client_side_options_are_checked(kw, msg):
    with pytest.raises(PrivnluError, match=msg):
        FederatedConfig(task="tweets", m="2", k=2, clients=2, **kw)


# -- local noise ----------------------------------------------------------------------------------------

def test_local_noise_is_dense_and_hides_the_token_rows(tiny_model, tmp_path):
    cfg = joint_cfg(tiny_model, tmp_path, train_embeddings=True, local_clip=1.0, local_noise=1.0)
    arrays = build_model(cfg, load_encoder(tiny_model), init_seed=0).to_arrays()
    rep = client_update(cfg, 0, RecordDict(), 1, arrays)
    grads = {n: a.numpy() for n, a in rep["gradients"].items()}
    word = next(n for n in grads if n.endswith("word_embeddings.weight"))
    assert np.all(grads[word] != 0)
    assert token_row_leaks(grads, shard_token_ids(cfg, 0)) == []
    # seeded check of the noise scale: std = z C = 1 per coordinate, within 1% over ~1M draws
    assert np.std(grads[word]) == pytest.approx(1.0, rel=0.01)
    leak = read_token_set(grads)
    true = {i for row in replay_batch(cfg, 0, 1)[1] for i in row}
    assert leak.dense and score_tokens(leak.token_ids, true)["recall"] < 0.2


# -- ordering (b = 1) -----------------------------------------------------------------------------------

def test_single_sentence_is_reassembled_from_the_two_tables(tiny_model, tmp_path):
    cfg = joint_cfg(tiny_model, tmp_path, train_embeddings=True, batch_size=1, k=1, m="2")
    enc = load_encoder(tiny_model)
    arrays = build_model(cfg, enc, init_seed=0).to_arrays()
    view = AttackerView(EMBEDDING_LEAK_THREAT, encoder=enc)
    exact = 0
    for rnd in (1, 2, 3):
        rep = client_update(cfg, 0, RecordDict(), rnd, arrays)
        out = EmbeddingLeakAttack().run({n: a.numpy() for n, a in rep["gradients"].items()}, view, batch_size=1)
        _, true = replay_batch(cfg, 0, rnd)
        exact += score_sentences([out["sentence_ids"]], true)["exact_sentences"]
    assert exact == 3
    assert len(shard_indices(len(load_train(cfg)), 2, 0)) == 12


def test_single_sentence_order_holds_beyond_the_hidden_size_with_repeated_tokens():
    """b = 1 with 40 positions in d = 8 (least squares on all positions is underdetermined there, and misplaced
    tokens in every one of 20 such sentences), three tokens used 2-3 times (7 positions, fewer than d) as in a real
    sentence: the word rows are sums of the position rows
    of each token's positions."""
    from privnlu.attacks.gradient.embedding_leak import order_single

    g = torch.Generator().manual_seed(0)
    length, d = 40, 8
    sentence = list(range(100, 133)) + [7, 7, 7, 8, 8, 9, 9]  # 33 tokens used once, three repeated
    sentence = [sentence[i] for i in torch.randperm(length, generator=g).tolist()]
    pos = torch.zeros(64, d)
    pos[:length] = torch.randn(length, d, generator=g)
    word = torch.zeros(200, d)
    for p, t in enumerate(sentence):
        word[t] += pos[p]
    ids = sorted(set(sentence))
    assert len(ids) < length and order_single(word, pos, ids, length) == sentence


# -- b > 1: slots, linking by gradient matching, the sweep record and the report --------------------------

def test_linking_search_keeps_every_token_and_never_worsens_the_gradient_distance(tiny_model, tmp_path):
    from privnlu.attacks.gradient.text_recovery import initial_batch, measure

    assert initial_batch([[101, 101], [7, 8], [9]], 2, [101, 7, 8, 9, 5]) == [[101, 7, 9], [101, 8]]
    assert initial_batch([[101, 101], [7], [9, 10]], 2, [101, 7, 9, 10, 5]) == [[101, 7, 9], [101, 5, 10]]
    cfg = joint_cfg(tiny_model, tmp_path, train_embeddings=True, scheme="none", m="0", k=1)
    res = measure(cfg, trials=1, budget=8, seed=0)
    row = res["rows"][0]
    assert row["precision"] == 1.0 and row["recall"] == 1.0
    assert 0 <= row["token_accuracy"] <= 1 and row["grad_distance"] >= 0
    assert set(res) >= {"exact_sentences", "token_accuracy", "precision", "recall"}


def test_report_shows_recovered_word_sets_beside_the_true_sentences(tmp_path):
    from privnlu.io import write_json_atomic
    from privnlu.report import build_report

    write_json_atomic(tmp_path / "res" / "w.json", {"kind": "gradient_attack", "source": "wire", "wire": "x.safetensors",
                                                    "token_leak": [
        {"round": 1, "node_id": 100, "embedding_gradient": True, "token_ids": [101, 2143, 102],
         "tokens": ["[CLS]", "film", "[SEP]"], "precision": 1.0, "recall": 1.0, "true_sentences": ["a fine film"]},
        {"round": 1, "node_id": 101, "embedding_gradient": False}]})
    write_json_atomic(tmp_path / "res" / "s.json", {"kind": "embedding_leak_sweep", "results": [
        {"batch_size": 1, "scheme": "none", "m": "0", "k": 1, "trials": 2, "precision": 1.0, "recall": 1.0,
         "exact_sentences": 1.0, "token_accuracy": 1.0}]})
    page = build_report([tmp_path / "res"], tmp_path / "report").read_text()
    assert "Embedding-gradient leak" in page and "film" in page and "a fine film" in page
    assert "none (tables frozen)" in page and "exact sentences" in page
