"""The DAGER-class span inversion against client-side DP-SGD messages (tiny random-init 3-layer BERT, 32 wide): the
auditor replays the round's Poisson sample, DP-SGD's sampling and clipping alone leave the sentences recoverable,
its calibrated noise fills the span, on the client's messages and on a recorded Flower run's wire."""

from __future__ import annotations

import pytest
import torch
from flwr.app import RecordDict

from federated_helpers import capture_without_dropout
from privnlu.federated import FederatedConfig


pytestmark = pytest.mark.usefixtures("flower_task_identity")


def cfg_for(tiny3, tmp_path, **kw) -> FederatedConfig:
    base = dict(task="tweets", model=str(tiny3), clients=2, rounds=10, m="0", k=1, scheme="none", batch_size=1,
                mode="joint", train_limit=24, dev_limit=8, cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0,
                eval_mask="none", max_length=12, client_dp_epsilon=8.0)
    base.update(kw)
    return FederatedConfig(**base)


def test_the_auditor_replays_the_poisson_sample_the_client_draws(tiny3, tmp_path):
    from privnlu.federated.client import TextHideClient, client_rng, replay_batch
    from privnlu.federated.client_dp import ClientDPRound, replay_poisson_sample

    cfg = cfg_for(tiny3, tmp_path, batch_size=4)
    sizes = []
    for rnd in (1, 2, 3):
        client = TextHideClient(cfg, 0, RecordDict(), rnd)
        words = client_rng(cfg, 0, "client-dp", rnd).words(2)
        drawn = ClientDPRound(client, cfg, words)._run(lambda dp: dp.sample())
        assert torch.equal(replay_poisson_sample(cfg, len(client.data), words), drawn)
        texts, ids = replay_batch(cfg, 0, rnd)
        assert texts == [client.data.texts[i] for i in drawn.tolist()] and len(ids) == len(drawn)
        sizes.append(len(drawn))
    assert len(set(sizes)) > 1 or sizes[0] != 4  # Poisson: not the fixed batch of the non-private client


def test_clipping_alone_leaves_the_sentences_and_the_calibrated_noise_removes_them(tiny3, tmp_path):
    from privnlu.attacks.gradient.dager.measure import measure

    cfg = cfg_for(tiny3, tmp_path)
    clip_only = measure(cfg, trials=6, dropout="off", max_seconds=20, client_dp_noise=0.0)
    assert clip_only["empty"] < 6 and clip_only["exact"] >= 0.75, clip_only["rows"]
    dp = measure(cfg, trials=6, dropout="off", max_seconds=20)
    assert dp["client_dp_noise"] is None and dp["empty"] == clip_only["empty"]  # the same Poisson samples
    assert dp["exact"] == 0.0 and dp["rouge1"] <= 0.2 and dp["saturated"] == 6, dp["rows"]


def test_the_wire_attack_on_a_recorded_client_dp_run_recovers_nothing(tiny3, tmp_path):
    from privnlu.attacks.gradient.dager.attack import audit_capture_spans

    cfg = cfg_for(tiny3, tmp_path, rounds=2, batch_size=2, unprotected=True)
    capture = capture_without_dropout(cfg, tmp_path / "wire.safetensors")
    rows = audit_capture_spans(capture, model=str(tiny3), truth_cfg=cfg)
    assert len(rows) == 4  # 2 clients x 2 rounds, each a noisy DP-SGD gradient
    assert all(r["score"]["exact"] == 0.0 and not r["certified"] for r in rows), [r["score"] for r in rows]
