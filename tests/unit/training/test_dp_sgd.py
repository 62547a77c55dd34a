"""DP-SGD with Opacus (privnlu.training.dp_sgd) and the ``dp-sgd`` scheme: the accounted epsilon stays within the
target, the sampling is Poisson, models Opacus cannot train privately are refused, per-example gradients through
BERT are right, and ``train_run``/``privnlu train``/``privnlu predict`` state the guarantee."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from privnlu import schemes
from privnlu.data import TextDataset
from privnlu.data.tasks import get_task
from privnlu.errors import PrivnluError
from privnlu.models import MLPHead, load_encoder
from privnlu.training import TrainConfig
from privnlu.training import dp_sgd
from privnlu.training.batching import pad
from privnlu.training.dp_sgd import DPSGDConfig, check_private_ready, finetune_joint, train_head
from privnlu.training.engine import Prepared, RunSpec, train_run


def separable(n: int, d: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two well-separated classes around a non-zero mean (like sentence representations)."""
    g = torch.Generator().manual_seed(seed)
    w, mu = torch.randn(d, generator=g), torch.randn(d, generator=g)
    z = torch.randn(n, d, generator=g)
    y = (z @ w > 0).long()
    return mu + z + 1.5 * (2 * y[:, None] - 1) * w / w.norm(), y


def accuracy(head: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((head(x).argmax(-1) == y).float().mean())


@pytest.fixture(scope="module")
def frozen_run():
    """A head trained with DP-SGD at epsilon 8 on 1,000 separable examples, evaluated on 500 others."""
    x, y = separable(1500)
    config = DPSGDConfig(epsilon=8.0, epochs=4, batch_size=50, lr=1e-2, seed=0)
    result = train_head(x[:1000], y[:1000], num_outputs=2, config=config, hidden=(16,),
                        eval_fn=lambda h: {"accuracy": accuracy(h, x[1000:], y[1000:])})
    return x, y, config, result


def test_the_accounted_epsilon_stays_within_the_target_frozen(frozen_run):
    _, _, config, r = frozen_run
    assert r.steps == config.epochs * 20 and r.sample_rate == pytest.approx(50 / 1000)
    assert r.delta == pytest.approx(1 / (10 * 1000))  # the default delta: 1 / (10 n)
    assert 0.9 * config.epsilon < r.epsilon <= config.epsilon  # calibrated to the target, never above it
    assert r.accountant == "prv" and r.to_json()["target_epsilon"] == 8.0 and "model" not in r.to_json()
    assert [h["epoch"] for h in r.history] == [1, 2, 3, 4] and all("accuracy" in h["eval"] for h in r.history)


def test_a_dp_sgd_head_learns_a_separable_task_at_epsilon_8(frozen_run):
    x, y, _, r = frozen_run
    assert not r.model.training and not hasattr(r.model, "_module")  # the plain module, in eval mode
    assert accuracy(r.model, x[1000:], y[1000:]) > 0.8  # chance is about 0.5


def test_a_smaller_noise_multiplier_than_calibrated_gives_a_larger_epsilon(frozen_run):
    x, y, config, calibrated = frozen_run
    under = train_head(x[:1000], y[:1000], num_outputs=2, config=DPSGDConfig(
        epsilon=8.0, epochs=4, batch_size=50, noise_multiplier=calibrated.noise_multiplier / 2, seed=0))
    assert under.noise_multiplier == pytest.approx(calibrated.noise_multiplier / 2)
    assert under.epsilon > 1.5 * calibrated.epsilon and under.epsilon > config.epsilon
    assert "target_epsilon" not in under.to_json()  # nothing was calibrated


def test_the_accounted_epsilon_stays_within_the_target_joint(tiny_model):
    enc = load_encoder(tiny_model)
    texts = ["good movie", "bad movie", "great fun", "an awful mess"] * 10
    tok = enc.tokenizer(texts, truncation=True, max_length=16)
    ids = [torch.tensor(t) for t in tok["input_ids"]]
    types = [torch.tensor(t) for t in tok["token_type_ids"]]
    before = copy.deepcopy(enc.state_dict())
    config = DPSGDConfig(epsilon=4.0, epochs=2, batch_size=8, seed=0)
    r = finetune_joint(enc, MLPHead(enc.dim, 2, (8,), 0.0), ids, types, torch.tensor([1, 0, 1, 0] * 10), pad_id=0,
                       config=config)
    assert 0.9 * config.epsilon < r.epsilon <= config.epsilon and r.steps == 2 * 5
    assert r.model.encoder is enc and not r.model.training
    changed = [k for k, v in enc.state_dict().items() if not torch.equal(v, before[k])]
    assert any("position_embeddings" in k for k in changed) and not any("pooler" in k for k in changed)


def test_the_sampling_is_poisson(monkeypatch):
    """Opacus's DPDataLoader with its UniformWithReplacementSampler: batch sizes vary with mean q n and binomial
    variance n q (1 - q)."""
    made, sizes = [], []
    real_make, real_step = dp_sgd._make_private, dp_sgd._Private.step

    def make(*args, **kwargs):
        made.append(real_make(*args, **kwargs))
        return made[-1]

    def step(self, inputs, y, weight=1.0):
        sizes.append(len(y) if weight else 0)
        return real_step(self, inputs, y, weight)

    monkeypatch.setattr(dp_sgd, "_make_private", make)
    monkeypatch.setattr(dp_sgd._Private, "step", step)
    x, y = separable(400)
    r = train_head(x, y, num_outputs=2, config=DPSGDConfig(epsilon=8.0, epochs=5, batch_size=20, noise_multiplier=1.0,
                                                           seed=3))
    from opacus.data_loader import DPDataLoader
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    loader = made[0].loader
    assert isinstance(loader, DPDataLoader) and isinstance(loader.batch_sampler, UniformWithReplacementSampler)
    assert loader.batch_sampler.sample_rate == r.sample_rate == pytest.approx(0.05)
    b = torch.tensor(sizes, dtype=torch.float64)
    q, n = r.sample_rate, 400
    assert len(b) == r.steps == 100
    assert abs(b.mean() - q * n) < 4 * math.sqrt(n * q * (1 - q) / len(b))  # within 4 standard errors of q n
    assert 0.5 < b.var() / (n * q * (1 - q)) < 2  # a binomial's spread, not a fixed batch size


def test_an_epoch_is_ceil_n_over_batch_steps():
    """Opacus counts int(1 / q) steps per epoch, one short for some n (93 steps: 1 / (1 / 93) < 93)."""
    x, y = separable(93 * 5)
    r = train_head(x, y, num_outputs=2, config=DPSGDConfig(epsilon=8.0, epochs=2, batch_size=5, noise_multiplier=1.0,
                                                           seed=0))
    assert r.steps == 2 * 93 and r.sample_rate == 1 / 93


def test_batchnorm_is_refused_in_one_line():
    head = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    with pytest.raises(PrivnluError, match=r"1 \(BatchNorm1d\): BatchNorm") as err:
        train_head(torch.randn(20, 8), torch.randint(0, 2, (20,)), num_outputs=2, head=head,
                   config=DPSGDConfig(epsilon=8.0))
    assert "\n" not in str(err.value)
    frozen = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8).requires_grad_(False))  # it still mixes the batch
    with pytest.raises(PrivnluError, match="BatchNorm"):
        check_private_ready(frozen)


def test_a_parameter_without_a_per_sample_gradient_rule_is_refused():
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(8))  # used by this module itself: Opacus has no rule for it
            self.out = nn.Linear(8, 2)

        def forward(self, x):
            return self.out(x * self.scale)

    with pytest.raises(PrivnluError, match=r"the model \(Scaled\): Opacus has no per-sample gradient rule"):
        check_private_ready(Scaled())
    check_private_ready(MLPHead(8, 2))  # Linear layers are fine
    check_private_ready(Scaled().requires_grad_(False).out.requires_grad_(True))


def test_delta_above_one_over_n_and_bad_settings_are_refused():
    with pytest.raises(PrivnluError, match="above 1/n"):
        train_head(torch.randn(50, 4), torch.randint(0, 2, (50,)), num_outputs=2,
                   config=DPSGDConfig(epsilon=8.0, delta=0.05))
    assert DPSGDConfig(epsilon=1.0, delta=0.02).delta_for(50) == 0.02
    for bad, match in ((dict(accountant="gdp"), "unknown accountant"), (dict(epsilon=0.0), "epsilon"),
                       (dict(grad_sample_mode="fast"), "unknown grad sample mode"),
                       (dict(noise_multiplier=0.0), "noise multiplier")):
        with pytest.raises(PrivnluError, match=match):
            DPSGDConfig(**{"epsilon": 8.0, **bad})
    with pytest.raises(PrivnluError, match="unknown accountant"):
        schemes.create("dp-sgd", accountant="gdp")


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_per_example_gradients_through_bert_are_each_examples_own(tiny_model):
    """BERT feeds its position embedding one row for the whole batch; each example's gradient must still be the one
    it has alone (hooks mode, every parameter)."""
    from opacus import GradSampleModule

    enc = load_encoder(tiny_model)
    enc.model.pooler.requires_grad_(False)  # not reached under cls pooling
    torch.manual_seed(0)
    model = dp_sgd.EncoderHead(enc, MLPHead(enc.dim, 2, (8,), 0.0)).train()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    tok = enc.tokenizer(["good movie", "a bad bad movie", "great"], truncation=True)
    x, mask = pad([torch.tensor(t) for t in tok["input_ids"]], 0)
    y = torch.tensor([1, 0, 1])
    loss = dp_sgd.TaskLoss(False, "sum")
    alone = []
    for i in range(3):
        model.zero_grad()
        loss(model(x[i:i + 1], mask[i:i + 1]), y[i:i + 1]).backward()
        alone.append({k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad})
    model.zero_grad()
    model.per_example_embeddings()
    gsm = GradSampleModule(model, loss_reduction="sum")
    loss(gsm(x, mask), y).backward()
    for k, p in model.named_parameters():
        if p.requires_grad:
            assert p.grad_sample.shape[0] == 3, k
            assert all(torch.allclose(p.grad_sample[i], alone[i][k], atol=1e-5) for i in range(3)), k


def tiny_prep(tiny_model, n: int = 300, d: int = 16) -> Prepared:
    x, y = separable(n + 100, d)
    enc = load_encoder(tiny_model)
    enc.model.config.hidden_size = d  # the head width follows the features
    spec = get_task("sst2")
    tr = TextDataset("sst2", "train", ["t"] * n, y[:n].tolist(), label_names=spec.label_names)
    dv = TextDataset("sst2", "dev", ["t"] * 100, y[n:].tolist(), label_names=spec.label_names)
    return Prepared(spec, enc, tr, {"dev": dv}, x[:n], {"dev": x[n:]}, None, None)


def test_the_scheme_is_registered_and_train_run_keeps_the_model(tiny_model):
    cls = schemes.get("dp-sgd")
    assert cls is schemes.DPSGD and cls.formal == "dp" and cls.release == "model" and cls.level == "none"
    assert cls.threat.attacks == ("membership",) and not cls.federated
    prep = tiny_prep(tiny_model)
    scheme = schemes.create("dp-sgd", epsilon=4.0)
    spec = RunSpec(task="sst2", scheme=scheme, train=TrainConfig(epochs=3, batch_size=30, lr=1e-2, seed=0))
    assert spec.to_json()["dp"] == {"epsilon": 4.0, "delta": None, "clip": 1.0, "accountant": "prv"}
    keep: dict = {}
    rec = train_run(spec, prep, progress=False, keep=keep)
    dp = rec["dp"]
    assert rec["scheme"] == "dp-sgd" and 3.6 < dp["epsilon"] <= 4.0 and dp["delta"] == pytest.approx(1 / 3000)
    g = scheme.guarantee(calibration=dp)
    assert g.kind == "dp" and g.epsilon == dp["epsilon"] and f"({dp['epsilon']:.4g}, " in g.text
    assert scheme.guarantee(calibration=dp, joint=True).kind == "dp"  # joint DP-SGD keeps its guarantee
    assert schemes.from_record(rec).label == scheme.label
    logits = keep["query"](prep.eval_x["dev"])
    assert logits.shape == (100, 2) and not keep["head"].training and keep["encoder"] is prep.encoder
    assert torch.equal(logits.argmax(-1), keep["head"](prep.eval_x["dev"]).argmax(-1))


def test_keep_gives_the_query_path_of_every_scheme(tiny_model):
    prep = tiny_prep(tiny_model)
    spec = RunSpec(task="sst2", scheme=schemes.create("texthide", m=4, k=2), train=TrainConfig(epochs=1, seed=0))
    keep: dict = {}
    train_run(spec, prep, progress=False, keep=keep)
    x = prep.eval_x["dev"]
    assert keep["query"](x).shape == (100, 2)
    # the query path masks first (eval mask "pool"): unmasked rows give other logits
    assert not torch.allclose(keep["query"](x), keep["head"](x))


@pytest.mark.parametrize("mode,extra", [("frozen", []), ("joint", ["--dp-accountant", "rdp"])])
def test_train_and_predict_state_the_guarantee(mode, extra, tiny_model, toy_glue, tmp_path, capsys):
    import json

    from privnlu.cli.main import main

    out = tmp_path / mode
    assert main(["train", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir",
                 str(tmp_path / "c"), "--epochs", "1", "--batch-size", "8", "--quiet", "--mode", mode, "--scheme",
                 "dp-sgd", "--dp-epsilon", "4", *extra, "--out", str(out)]) == 0
    rec = json.loads((out / "result.json").read_text())
    eps = rec["dp"]["epsilon"]
    assert eps <= 4.0 and rec["dp"]["accountant"] == ("rdp" if extra else "prv")
    card = (out / "model" / "README.md").read_text()
    assert f"**Formal guarantee:** ({eps:.4g}, " in card and "-DP per training example" in card
    assert (out / "model" / "encoder" / "model.safetensors").exists() == (mode == "joint")  # the fine-tuned encoder
    capsys.readouterr()
    assert main(["predict", "--run", str(out), "--text", "a fine good film"]) == 0
    err = capsys.readouterr().err
    assert f"({eps:.4g}, " in err and "-DP per training example" in err and "no DP guarantee" not in err
