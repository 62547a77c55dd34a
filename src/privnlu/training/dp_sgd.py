"""DP-SGD (Abadi et al. 2016) with Opacus: a head on cached representations, or the encoder and head jointly.

Each step takes a Poisson sample of the training set (every example independently with probability ``q``, Opacus's
``DPDataLoader``), clips each example's gradient to L2 norm ``clip``, sums, adds Gaussian noise of standard
deviation ``noise_multiplier * clip`` and divides by the expected batch size. Opacus's accountant (PRV by default,
or RDP) composes the steps; unless ``noise_multiplier`` is given, the noise is calibrated before training for the
target ``(epsilon, delta)`` over exactly the steps the run takes, and the result states the accountant's epsilon
after training. ``q = 1 / ceil(n / batch_size)`` as Opacus sets it (``batch_size / n`` when it divides ``n``); an
epoch is ``ceil(n / batch_size)`` steps. The optimizer is Adam at a constant rate (``TrainConfig``'s weight decay
and warm-up do not apply). ``delta`` defaults to ``1 / (10 n)`` and is refused above ``1 / n``.

Per-example gradients: ``grad_sample_mode="hooks"`` materialises them (Opacus's hooks); ``"ghost"`` is Opacus's
ghost clipping (Li et al. 2022), which computes only their norms and takes a second backward pass. ``"auto"``
means :data:`AUTO_MODE`, ghost: ``benchmarks/bench_dp_sgd.py`` (one thread of a 2-core AVX2 CPU) measured joint
fine-tuning of a random 2-layer, 128-wide BERT at sequence length 32 and batch 32 at 0.47 of the non-private
speed with ghost clipping and 0.10 with hooks (ghost 4.9 times faster: hooks materialise every example's gradient
of the 30,522-row word embedding), and a frozen-mode head (batch 256) at 0.37 with ghost and 0.05 with hooks.

Joint batches are padded to their own longest example. Length-bucketing is not used: it makes the batch's
members depend on each other, while the accountant assumes each example is sampled independently. Word,
position and token-type embeddings get their per-example gradients; BERT's position embedding, fed a batch of one
row broadcast to every example, is given one row per example while the model is trained (the same values).
Parameters the loss never reaches (BERT's pooler under ``cls`` or ``mean`` pooling) are left frozen.

Randomness: the noise comes from a dedicated ``torch.Generator`` and the Poisson sampling from another, each seeded
with 64 bits of :class:`~privnlu.rng.SecretGenerator` (the OS CSPRNG unless ``seed`` is given, which is for
experiments only). Opacus's ``secure_mode`` needs ``torchcsprng``, which is not available for this torch, so the
noise is torch's Gaussian sampler on a generator seeded from the OS CSPRNG. A run interrupted midway restarts from
scratch: resuming would need the accountant's state, the optimizer's and both generators'.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .. import accounting
from ..errors import PrivnluError, require, require_choice, require_learning_rate
from ..models.encoder import SentenceEncoder
from ..models.heads import MLPHead
from ..params import CLIP, DELTA, EPSILON
from ..rng import SecretGenerator
from .batching import pad
from .trainer import epoch_line

#: per-example gradient modes, and what ``"auto"`` means (the faster one in benchmarks/bench_dp_sgd.py)
GRAD_SAMPLE_MODES = ("hooks", "ghost", "auto")
AUTO_MODE = "ghost"
ACCOUNTANTS = ("prv", "rdp")

EvalFn = Callable[[nn.Module], dict]


@dataclass(frozen=True)
class DPSGDConfig:
    """The settings of one DP-SGD run (see the module docstring)."""

    epsilon: float  # target epsilon for the whole training run
    delta: float | None = None  # None: 1 / (10 n); at most 1 / n
    clip: float = 1.0  # max per-example gradient L2 norm
    accountant: str = "prv"
    epochs: int = 3
    batch_size: int = 64  # expected batch size
    lr: float = 1e-3
    grad_sample_mode: str = "auto"
    noise_multiplier: float | None = None  # overrides the calibration; epsilon is then the accountant's
    seed: int | None = None  # EXPERIMENTS ONLY: model init, sampling and noise

    def __post_init__(self) -> None:
        EPSILON.require("epsilon", self.epsilon)
        if self.delta is not None:
            DELTA.require("delta", self.delta)
        CLIP.require("the clipping bound", self.clip)
        require_choice("accountant", self.accountant, ACCOUNTANTS)
        require_choice("grad sample mode", self.grad_sample_mode, GRAD_SAMPLE_MODES)
        require(self.epochs >= 1, f"epochs must be >= 1, not {self.epochs}")
        require(self.batch_size >= 1, f"the batch size must be >= 1, not {self.batch_size}")
        require_learning_rate(self.lr)
        if self.noise_multiplier is not None:
            require(math.isfinite(self.noise_multiplier) and self.noise_multiplier > 0,
                    f"the noise multiplier must be > 0, not {self.noise_multiplier}")

    @property
    def mode(self) -> str:
        """The per-example gradient mode, ``"auto"`` resolved."""
        return AUTO_MODE if self.grad_sample_mode == "auto" else self.grad_sample_mode

    def delta_for(self, n: int) -> float:
        """The run's delta for ``n`` training examples: ``1 / (10 n)`` by default; refused above ``1 / n``."""
        require(n >= 1, "DP-SGD needs at least one training example")
        delta = 1 / (10 * n) if self.delta is None else float(self.delta)
        require(delta <= 1 / n, f"delta = {delta:g} is above 1/n = {1 / n:g} for n = {n} training examples: a "
                                f"mechanism that publishes a random example meets it; use delta <= {1 / n:g} "
                                "(default: 1/(10 n))")
        return delta


@dataclass
class DPSGDResult:
    """A trained model and its accounted guarantee."""

    model: nn.Module  # the plain trained module, ready for inference
    epsilon: float  # the accountant's epsilon after training
    delta: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    accountant: str
    history: list[dict] = field(default_factory=list)  # per epoch: train loss (and eval metrics)
    target_epsilon: float | None = None  # None when the noise multiplier was given
    clip: float = 1.0
    epochs: int = 0
    grad_sample_mode: str = ""
    noise_source: str = ""

    def to_json(self) -> dict:
        """Everything but the model (a run record's ``dp`` block)."""
        out = {"method": "dp-sgd", "epsilon": self.epsilon, "accounted_epsilon": self.epsilon,
               "target_epsilon": self.target_epsilon, "delta": self.delta, "clip": self.clip,
               "noise_multiplier": self.noise_multiplier, "sample_rate": self.sample_rate, "steps": self.steps,
               "epochs": self.epochs, "accountant": self.accountant, "grad_sample_mode": self.grad_sample_mode,
               "noise_source": self.noise_source, "history": self.history}
        return {k: v for k, v in out.items() if v is not None}


def check_private_ready(module: nn.Module) -> None:
    """PrivnluError (one line, naming the offending modules and Opacus's reason) if Opacus cannot make the module
    private: Opacus's validators (BatchNorm, LSTM, ...), a trainable layer with buffers, or a layer holding trainable
    parameters without a per-sample gradient rule in Opacus (its functorch fallback is not used: it is right only
    for layers that treat each example on its own, which privnlu cannot check). Any BatchNorm is refused, trainable
    or not: in training it mixes the examples of a batch."""
    from opacus.grad_sample import GradSampleModule
    from opacus.utils.module_utils import trainable_modules
    from opacus.validators import ModuleValidator

    problems = []
    for name, sub in module.named_modules():
        if isinstance(sub, nn.modules.batchnorm._BatchNorm) and not any(p.requires_grad for p in sub.parameters()):
            problems.append(f"{name or 'the model'} ({type(sub).__name__}): BatchNorm mixes the examples of a batch")
    for name, sub in trainable_modules(module):
        where = f"{name or 'the model'} ({type(sub).__name__})"
        errors = ModuleValidator.VALIDATORS[type(sub)](sub) if type(sub) in ModuleValidator.VALIDATORS else []
        if errors:
            problems += [f"{where}: {_first_sentence(e)}" for e in errors]
        elif type(sub) not in GradSampleModule.GRAD_SAMPLERS:
            problems.append(f"{where}: Opacus has no per-sample gradient rule for its own parameters")
        elif any(True for _ in sub.buffers()):
            problems.append(f"{where}: a trainable layer with buffers, which Opacus does not support")
    if problems:
        raise PrivnluError("Opacus cannot train this model with DP-SGD: " + "; ".join(problems))


def _first_sentence(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text.split(". ")[0].rstrip(".")


class TaskLoss(nn.Module):
    """Cross-entropy on class ids, or squared error on scores (one output); ``reduction`` as Opacus sets it."""

    def __init__(self, regression: bool, reduction: str = "mean") -> None:
        super().__init__()
        self.regression, self.reduction = regression, reduction

    def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        per = (out[:, 0] - y) ** 2 if self.regression else F.cross_entropy(out, y, reduction="none")
        return per if self.reduction == "none" else per.sum() if self.reduction == "sum" else per.mean()


class EncoderHead(nn.Module):
    """The encoder and the head as one module, ``head(encoder(input_ids, mask, token_type_ids))``."""

    def __init__(self, encoder: SentenceEncoder, head: nn.Module) -> None:
        super().__init__()
        self.encoder, self.head = encoder, head
        self._rows: int | None = None
        self._hooks: list = []

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        self._rows = input_ids.shape[0]
        try:
            return self.head(self.encoder(input_ids, attention_mask, token_type_ids))
        finally:
            self._rows = None

    def per_example_embeddings(self) -> None:
        """Give an embedding fed one row for the whole batch (BERT's positions) one row per example, so that its
        per-example gradients have the batch's size (the values are those broadcasting gives); only inside
        :meth:`forward`."""

        def expand(module: nn.Module, args: tuple) -> tuple | None:
            rows, ids = self._rows, args[0]
            if rows is None or ids.dim() < 2:
                return None
            if ids.shape[0] == 1 and rows != 1:
                ids = ids.expand(rows, *ids.shape[1:])
            # contiguous: ghost clipping's embedding rule views the ids (an expanded buffer is not)
            return (ids.contiguous(), *args[1:]) if ids is not args[0] or not ids.is_contiguous() else None

        self._hooks = [m.register_forward_pre_hook(expand) for m in self.encoder.modules()
                       if isinstance(m, nn.Embedding)]

    def remove_hooks(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks = []


def train_head(features: torch.Tensor, labels: torch.Tensor, *, num_outputs: int, config: DPSGDConfig,
               hidden: tuple[int, ...] | None = None, dropout: float = 0.0, head: nn.Module | None = None,
               eval_fn: EvalFn | None = None, progress: bool = False) -> DPSGDResult:
    """Frozen mode: DP-SGD on a head over cached sentence representations (Poisson sampling, per-example clipping,
    Gaussian noise). ``labels``: class ids, or float scores with ``num_outputs = 1``; ``head``: the module to train
    (default: an :class:`~privnlu.models.heads.MLPHead` with ``hidden`` and ``dropout``); ``eval_fn(head)`` after
    each epoch returns the metrics kept in the history."""
    if head is None:
        with _seeded(config.seed):
            head = MLPHead(features.shape[1], num_outputs, hidden, dropout)
    check_private_ready(head)
    device = next(head.parameters()).device
    regression = _check_labels(labels, len(features), num_outputs)

    def batch(idx: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        return (features[idx.to(features.device)].float().to(device),), labels[idx].to(device)

    dummy = (torch.zeros(1, features.shape[1], device=device),)
    groups = [{"params": [p for p in head.parameters() if p.requires_grad], "lr": config.lr}]
    return _train(head, groups, len(features), batch, dummy, config, regression, eval_fn, progress)


def finetune_joint(encoder: SentenceEncoder, head: nn.Module, ids: list[torch.Tensor],
                   types: list[torch.Tensor] | None, labels: torch.Tensor, *, pad_id: int, config: DPSGDConfig,
                   eval_fn: EvalFn | None = None, progress: bool = False,
                   encoder_lr: float | None = None) -> DPSGDResult:
    """Joint mode: DP-SGD on encoder + head over token ids, each batch padded to its longest example (no
    length-bucketing: see the module docstring). ``encoder`` and ``head`` are trained in place; the result's model
    is their :class:`EncoderHead`, and ``eval_fn`` is called with it. ``encoder_lr``: the encoder's learning rate
    (default: ``config.lr``)."""
    model = EncoderHead(encoder, head)
    check_private_ready(model)
    device = next(head.parameters()).device
    regression = _check_labels(labels, len(ids), None)

    def batch(idx: torch.Tensor) -> tuple[tuple[torch.Tensor | None, ...], torch.Tensor]:
        rows = idx.tolist()
        x, mask = pad([ids[i] for i in rows], pad_id)
        tt = pad([types[i] for i in rows])[0].to(device) if types is not None else None
        return (x.to(device), mask.to(device), tt), labels[idx].to(device)

    dummy = (torch.full((1, 2), pad_id, dtype=torch.long, device=device), torch.ones(1, 2, dtype=torch.long,
                                                                                      device=device), None)
    groups = [{"params": [p for p in head.parameters() if p.requires_grad], "lr": config.lr},
              {"params": [p for p in encoder.parameters() if p.requires_grad], "lr": encoder_lr or config.lr}]
    model.per_example_embeddings()
    try:
        return _train(model, groups, len(ids), batch, dummy, config, regression, eval_fn, progress)
    finally:
        model.remove_hooks()


def _check_labels(labels: torch.Tensor, n: int, num_outputs: int | None) -> bool:
    """True for regression scores (float labels), False for class ids; refuses a mismatch."""
    require(labels.dim() == 1 and len(labels) == n,
            f"need one label per example ({n}), not shape {tuple(labels.shape)}")
    regression = labels.is_floating_point()
    require(not regression or num_outputs in (None, 1), "float labels are regression scores: use num_outputs = 1")
    return regression


class _seeded:
    """Run a block on a forked torch RNG seeded with ``seed`` (nothing happens without a seed)."""

    def __init__(self, seed: int | None) -> None:
        self.seed, self.fork = seed, torch.random.fork_rng(devices=[], enabled=seed is not None)

    def __enter__(self) -> None:
        self.fork.__enter__()
        if self.seed is not None:
            torch.manual_seed(self.seed)

    def __exit__(self, *exc: Any) -> None:
        self.fork.__exit__(*exc)


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """Silence a library logger's warnings for a block."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _freeze_unreached(model: nn.Module, dummy: tuple, groups: list[dict]) -> None:
    """Freeze (and drop from ``groups``) the parameters a forward pass does not reach: Opacus needs a per-example
    gradient for every parameter it trains. The probe input is a constant, not training data."""
    params = [p for g in groups for p in g["params"]]
    was = model.training
    model.eval()
    out = model(*dummy)
    model.train(was)
    grads = torch.autograd.grad(out.float().sum(), params, allow_unused=True)
    unreached = {id(p) for p, g in zip(params, grads) if g is None}
    for p in params:
        if id(p) in unreached:
            p.requires_grad_(False)
    for g in groups:
        g["params"] = [p for p in g["params"] if id(p) not in unreached]
    groups[:] = [g for g in groups if g["params"]]


def _train(model: nn.Module, groups: list[dict], n: int,
           batch: Callable[[torch.Tensor], tuple[Sequence[Any], torch.Tensor]], dummy: tuple, config: DPSGDConfig,
           regression: bool, eval_fn: EvalFn | None, progress: bool) -> DPSGDResult:
    """The DP-SGD loop shared by both modes; ``batch(idx)`` gives the model's inputs and the labels of ``idx``,
    ``dummy`` a constant input of one row (never training data)."""
    plan = plan_noise(n, config)
    delta, sigma = plan["delta"], plan["noise_multiplier"]
    _freeze_unreached(model, dummy, groups)
    require(bool(groups), "the model has no trainable parameter")
    rng = SecretGenerator(config.seed, warn=False)
    noise_gen, sample_gen = (torch.Generator().manual_seed(int(w)) for w in rng.words(2))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(n)),
                                         batch_size=min(config.batch_size, n), generator=sample_gen)
    steps_per_epoch = plan["steps"] // config.epochs
    assert steps_per_epoch == len(loader)
    empty_y = torch.zeros(1, dtype=torch.float32 if regression else torch.long, device=dummy[0].device)
    model.train()
    private = _make_private(model, groups, loader, sigma, config, regression, noise_gen)
    private.loader.batch_sampler.steps = steps_per_epoch  # Opacus's int(1 / q) is one short for some n (rounding)
    assert len(private.loader) == steps_per_epoch
    history, steps = [], 0
    with _seeded(config.seed), warnings.catch_warnings(), _quiet("opacus.data_loader"):  # empty samples are handled
        warnings.filterwarnings("ignore", message=".*[Ff]ull backward hook")
        for epoch in range(config.epochs):
            t0, seen, loss_sum = time.time(), 0, 0.0
            bar = tqdm(total=steps_per_epoch, desc=f"DP-SGD epoch {epoch + 1}/{config.epochs}", disable=not progress,
                       leave=False)
            for (idx,) in private.loader:
                if len(idx):
                    loss = private.step(*batch(idx))
                    loss_sum, seen = loss_sum + loss * len(idx), seen + len(idx)
                else:  # an empty Poisson sample still takes its noisy step: a constant example of weight 0
                    private.step(dummy, empty_y, weight=0.0)
                steps += 1
                bar.update(1)
            bar.close()
            entry: dict[str, Any] = {"epoch": epoch + 1, "train_loss": loss_sum / max(seen, 1),
                                     "seconds": time.time() - t0}
            if eval_fn is not None:
                model.eval()
                with torch.no_grad():
                    entry["eval"] = eval_fn(model)
                model.train()
            history.append(entry)
            if progress and "eval" in entry:
                tqdm.write(epoch_line(entry, config.epochs), file=sys.stderr)
    plain = private.module.to_standard_module()
    plain.eval()
    epsilon = accounted_epsilon(steps_event(private.engine.accountant.history), delta, config.accountant)
    return DPSGDResult(model=plain, epsilon=epsilon, delta=delta,
                       noise_multiplier=float(sigma), sample_rate=plan["sample_rate"], steps=steps,
                       accountant=config.accountant, history=history,
                       target_epsilon=None if config.noise_multiplier else float(config.epsilon), clip=config.clip,
                       epochs=config.epochs, grad_sample_mode=config.mode,
                       noise_source="seeded (experiments only)" if config.seed is not None else
                       "torch generator seeded from the OS CSPRNG")


def plan_noise(n: int, config: DPSGDConfig) -> dict:
    """What a run over ``n`` examples will use, before any training: its ``delta``, ``sample_rate``, ``steps`` and
    ``noise_multiplier`` (the override, or calibrated for ``(epsilon, delta)`` over exactly those steps)."""
    delta = config.delta_for(n)
    sample_rate, steps = plan_steps(n, config)
    sigma = config.noise_multiplier or calibrate(config.epsilon, delta, sample_rate, steps, config.accountant)
    return {"delta": delta, "sample_rate": sample_rate, "steps": steps, "noise_multiplier": sigma}


def plan_steps(n: int, config: DPSGDConfig) -> tuple[float, int]:
    """``(q, steps)`` of a run over ``n`` examples: ``ceil(n / batch_size)`` steps per epoch at ``q = 1 / that``."""
    per_epoch = math.ceil(n / min(config.batch_size, n))
    return 1 / per_epoch, per_epoch * config.epochs


@functools.lru_cache(maxsize=256)
def calibrate(epsilon: float, delta: float, sample_rate: float, steps: int, accountant: str) -> float:
    """The smallest noise multiplier (Opacus's search, to 0.01 in epsilon) for ``(epsilon, delta)`` after ``steps``
    Poisson-sampled steps at ``sample_rate``; remembered per process (the search takes seconds, and reference
    models of an audit ask for the same noise again)."""
    try:
        return accounting.noise_for(epsilon, delta, lambda z: accounting.gaussian_event(z, sample_rate, steps),
                                    f"opacus-{accountant}")
    except PrivnluError as exc:
        why = str(exc).partition(" (")[2].removesuffix(")") or str(exc)
        raise PrivnluError(f"no noise multiplier reaches epsilon = {epsilon:g} at delta = {delta:g} over {steps} "
                           f"steps ({why})") from None


def steps_event(history: Sequence[tuple[float, float, int]]):
    """The DP event of Opacus's accountant history: ``(noise multiplier, sampling rate, steps)`` per kind of
    Poisson-sampled Gaussian step."""
    return accounting.compose([accounting.gaussian_event(z, q, n) for z, q, n in history])


def accounted_epsilon(event, delta: float, accountant: str) -> float:
    """Epsilon at ``delta`` of DP-SGD steps ``event`` with Opacus's ``accountant`` (``prv`` or ``rdp``), as training
    accounts them (:mod:`privnlu.accounting`)."""
    return accounting.epsilon(event, delta, f"opacus-{accountant}")


@dataclass
class _Private:
    """Opacus's objects for one run: the wrapped module, the DP optimizer, the criterion, the Poisson loader."""

    module: Any
    optimizer: Any
    criterion: Any
    loader: Any
    engine: Any

    def step(self, inputs: Sequence[Any], y: torch.Tensor, weight: float = 1.0) -> float:
        """One DP-SGD step on a batch (forward, per-example clipping, noise, update); the batch's mean loss.
        ``weight`` scales every example's loss (0: the step adds noise only)."""
        loss = self.criterion(self.module(*inputs), y)
        if weight != 1.0:
            loss = loss * weight
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())


def _make_private(model: nn.Module, groups: list[dict], loader: Any, sigma: float, config: DPSGDConfig,
                  regression: bool, noise_gen: torch.Generator) -> _Private:
    """Opacus's ``make_private`` with Poisson sampling and an explicit noise generator."""
    from opacus import PrivacyEngine

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")  # see the module docstring
        engine = PrivacyEngine(accountant=config.accountant)
    criterion = TaskLoss(regression)
    out = engine.make_private(module=model, optimizer=torch.optim.Adam(groups, lr=config.lr), criterion=criterion,
                              data_loader=loader, noise_multiplier=sigma, max_grad_norm=config.clip,
                              poisson_sampling=True, grad_sample_mode=config.mode, noise_generator=noise_gen)
    module, optimizer, *rest = out
    return _Private(module, optimizer, rest[0] if len(rest) == 2 else criterion, rest[-1], engine)


__all__ = ["AUTO_MODE", "DPSGDConfig", "DPSGDResult", "EncoderHead", "calibrate", "check_private_ready",
           "finetune_joint", "train_head"]
