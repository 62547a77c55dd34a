"""The shared training loop: the (0, 1) identity, learning, resume, joint mode and losses."""

import json
from dataclasses import replace

import pytest
import torch

from privnlu.data import TextDataset
from privnlu.data.tasks import get_task
from privnlu.errors import PrivnluError
from privnlu.training.engine import Prepared, RunSpec, train_run, with_scheme
from privnlu.models import load_encoder
from privnlu.schemes import create
from privnlu.training import TrainConfig, soft_cross_entropy, task_loss


def synthetic_prep(tiny_model, n=600, d=32, task="sst2", seed=0):
    """Linearly separable features around a non-zero mean, like real sentence representations
    (whose mean is what lets a head tell the pool's masks apart): a frozen-mode run must learn them."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(d, generator=g)
    mu = 3 * torch.randn(d, generator=g)

    def make(m):
        z = torch.randn(m, d, generator=g)
        return mu + z, (z @ w > 0).long()

    (xt, yt), (xd, yd) = make(n), make(200)
    enc = load_encoder(tiny_model)
    spec = get_task(task)
    tr = TextDataset(task, "train", ["t"] * n, yt.tolist(), label_names=spec.label_names)
    dv = TextDataset(task, "dev", ["t"] * 200, yd.tolist(), label_names=spec.label_names)
    enc.model.config.hidden_size = d  # the head width follows the features here
    return Prepared(spec, enc, tr, {"dev": dv}, xt, {"dev": xd}, torch.randn(100, d, generator=g), None)


def test_soft_cross_entropy_by_hand():
    logits = torch.tensor([[0.0, 0.0]])
    assert soft_cross_entropy(logits, torch.tensor([[0.3, 0.7]])).item() == pytest.approx(0.693147, abs=1e-5)
    assert task_loss(torch.tensor([[2.0]]), torch.tensor([[1.0]]), regression=True).item() == pytest.approx(1.0)


def test_texthide_0_1_equals_baseline_exactly(tiny_model):
    prep = synthetic_prep(tiny_model)
    base = RunSpec(task="sst2", train=TrainConfig(epochs=2, seed=11))
    a = train_run(base, prep, progress=False)
    b = train_run(replace(base, scheme=create("texthide", m=0, k=1)), prep, progress=False)
    assert a["history"][-1]["train_loss"] == b["history"][-1]["train_loss"]
    assert a["eval"] == b["eval"]


@pytest.mark.parametrize("m,k,inter,epochs", [(0, 1, False, 10), (0, 4, False, 10), (0, 4, True, 10), (2, 2, False, 15)])
def test_frozen_mode_learns_separable_data(tiny_model, m, k, inter, epochs):
    # masked heads need the pool mask on dev too (eval_mask="pool"); see docs/design/texthide.md
    prep = synthetic_prep(tiny_model)
    cfg = TrainConfig(epochs=epochs, lr=5e-3, batch_size=32, seed=1, eval_mask="pool" if m else "none")
    spec = with_scheme(RunSpec(task="sst2", train=cfg), m=m, k=k, inter=inter)
    rec = train_run(spec, prep, progress=False)
    assert rec["score"] > 75, rec["score"]  # chance is about 50


def test_resume_continues_and_keeps_key(tiny_model, tmp_path):
    prep = synthetic_prep(tiny_model)
    spec = with_scheme(RunSpec(task="sst2", train=TrainConfig(epochs=3, seed=2)), m=8, k=2)
    rec = train_run(spec, prep, run_dir=tmp_path, out=tmp_path / "result.json", progress=False)
    key_before = (tmp_path / "key.pt").read_bytes()
    again = train_run(replace(spec, train=TrainConfig(epochs=3, seed=2)), prep, run_dir=tmp_path, resume=True, progress=False)
    assert again["history"] == rec["history"]  # all epochs were done: nothing retrained
    assert again["seconds"] >= sum(h["seconds"] for h in rec["history"])  # the earlier call's training counts
    assert (tmp_path / "key.pt").read_bytes() == key_before
    other = replace(spec, train=TrainConfig(epochs=5, seed=2))
    with pytest.raises(PrivnluError, match="other settings"):
        train_run(other, prep, run_dir=tmp_path, resume=True, progress=False)
    assert json.loads((tmp_path / "result.json").read_text())["score"] == rec["score"]


def test_joint_runs_start_from_the_pretrained_encoder_and_leave_it_untouched(tiny_model, tmp_path):
    # a recipe trains baseline, intra and inter on one ``Prepared``: each must fine-tune its own copy of the encoder
    # (every run starts from the pretrained encoder, never from the previous run's fine-tuned one)
    enc = load_encoder(tiny_model)
    before = {k: v.detach().clone() for k, v in enc.state_dict().items()}
    spec = get_task("sst2")
    texts = ["good movie", "bad movie", "great fun", "awful mess"] * 4
    tr = TextDataset("sst2", "train", texts, [1, 0, 1, 0] * 4, label_names=spec.label_names)
    prep = Prepared(spec, enc, tr, {"dev": tr}, None, {}, None, ["a public sentence", "another one here"])
    run = with_scheme(RunSpec(task="sst2", mode="joint", train=TrainConfig(epochs=2, batch_size=8, seed=0)), m=4, k=4, inter=True)
    first = train_run(run, prep, run_dir=tmp_path, progress=False)
    assert first["mode"] == "joint" and len(first["history"]) == 2
    assert all(torch.equal(v, before[k]) for k, v in enc.state_dict().items())  # the shared encoder is untouched
    from privnlu.models.checkpoint import read as read_checkpoint

    trained = read_checkpoint(tmp_path / "checkpoint.pt", "modules.encoder")[0]
    assert any(not torch.equal(v, before[k]) for k, v in trained.items())  # the run's copy was fine-tuned
    second = train_run(run, prep, progress=False)  # same seed, same start: the same run again
    assert [h["train_loss"] for h in second["history"]] == pytest.approx([h["train_loss"] for h in first["history"]],
                                                                          abs=1e-6)


def test_bad_training_settings():
    with pytest.raises(PrivnluError, match="learning rate"):
        TrainConfig(lr=0)
    with pytest.raises(PrivnluError, match="scheme none takes no m"):
        RunSpec(task="sst2", scheme=create("none", m=4))
    with pytest.raises(PrivnluError, match="larger than the batch size"):
        RunSpec(task="sst2", scheme=create("texthide", k=8), train=TrainConfig(batch_size=4))


def test_abs_input_head_is_mask_invariant(tiny_model):
    from privnlu.models.heads import AbsInput, MLPHead

    head = AbsInput(MLPHead(8, 2)).eval()
    x = torch.randn(5, 8)
    sigma = torch.where(torch.rand(5, 8) < 0.5, -1.0, 1.0)
    torch.testing.assert_close(head(x * sigma), head(x))


def test_epoch_line_names_loss_and_dev_metrics():
    from privnlu.training.trainer import epoch_line

    line = epoch_line({"epoch": 2, "train_loss": 0.5, "seconds": 3.2,
                       "eval": {"dev": {"accuracy": 0.75, "score": 75.0}}}, 20)
    assert line == "epoch 2/20: train loss 0.5000, dev accuracy 0.7500 (3 s)"


def test_a_resumed_state_counts_the_seconds_of_the_epochs_it_restored():
    from privnlu.training.trainer import TrainState

    history = [{"epoch": 1, "seconds": 3.0}, {"epoch": 2, "seconds": 4.5}, {"epoch": 3, "seconds": 2.0}]
    assert TrainState(epoch=3, history=history, resumed_epochs=2).earlier_seconds == 7.5
    assert TrainState(epoch=3, history=history).earlier_seconds == 0.0
