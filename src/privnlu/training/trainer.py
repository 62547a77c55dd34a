"""One training loop for both TextHide training modes.

(a) *frozen*: cached representations feed an MLP head;
(b) *joint*: the encoder and head are fine-tuned together, gradients flowing
back through the (linear) mixing and masking, as in the paper.

Both are ``head(hide(represent(batch)))`` with a different ``represent``, so they
share this loop: AdamW, a linear schedule with warm-up ratio 0.1, soft-label
cross-entropy (MSE for regression), fresh TextHide keys for every batch of
every epoch, evaluation on unmixed dev representations after each epoch, and an
atomic checkpoint per epoch (safetensors + JSON, :mod:`privnlu.models.checkpoint`) so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Callable, Sequence

import torch
from pydantic import Field, JsonValue
from torch import nn
from tqdm.auto import tqdm

from ..choices import EVAL_MASKS
from ..data import metrics as glue_metrics
from ..data.tasks import TaskSpec
from ..errors import PrivnluError, require_learning_rate
from ..mechanisms.texthide import TextHide
from ..models import checkpoint as ckpt
from ..models.precision import autocast
from .batching import bucket_batches, count_batches
from .losses import task_loss

#: How dev representations are presented at evaluation. They are never mixed (k = 1).
#: "pool": each is masked with a mask from the training pool, as the data owner encodes its
#: own queries with its key (the reference code's behaviour; privnlu's default, because a head
#: trained on masked inputs scores at chance on unmasked ones, docs/papers/huang2020.md).
#: "none": raw representations.


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings shared by both modes."""

    epochs: int = 20
    lr: float = 1e-3
    batch_size: int = 64
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    hidden: tuple[int, ...] | None = None
    dropout: float = 0.1
    eval_mask: str = "pool"
    abs_input: bool = False
    seed: int | None = None

    def __post_init__(self) -> None:
        require_learning_rate(self.lr)
        if self.epochs < 1:
            raise PrivnluError(f"epochs must be >= 1, not {self.epochs}")
        if self.batch_size < 1:
            raise PrivnluError(f"the batch size must be >= 1, not {self.batch_size}")
        if not 0 <= self.warmup_ratio < 1:
            raise PrivnluError(f"the warm-up ratio must be in [0, 1), not {self.warmup_ratio}")
        if self.eval_mask not in EVAL_MASKS:
            raise PrivnluError(f"eval mask must be one of {EVAL_MASKS}, not '{self.eval_mask}'")


EvalSet = tuple[torch.Tensor, torch.Tensor]  # (representations, labels)


@dataclass
class TrainState:
    epoch: int = 0
    history: list[dict] = field(default_factory=list)
    resumed_epochs: int = 0  # epochs restored from a checkpoint, trained by an earlier call

    @property
    def earlier_seconds(self) -> float:
        """Training seconds of the epochs an earlier call ran (0 for a run that did not resume)."""
        return float(sum(h["seconds"] for h in self.history[:self.resumed_epochs]))


def linear_warmup(optimizer: torch.optim.Optimizer, total_steps: int, warmup_ratio: float) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up to the peak rate over ``warmup_ratio`` of the steps, then linear decay to 0."""
    warm = max(1, int(round(warmup_ratio * total_steps)))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@torch.no_grad()
def predict(head: nn.Module, reps: torch.Tensor, *, regression: bool, batch_size: int = 1024) -> torch.Tensor:
    was = head.training
    head.eval()
    dev = next(head.parameters()).device
    outs = [head(reps[i : i + batch_size].to(dev)).float().cpu() for i in range(0, len(reps), batch_size)]
    head.train(was)
    logits = torch.cat(outs)
    return logits.squeeze(-1) if regression else logits.argmax(-1)


def evaluate(head: nn.Module, eval_sets: dict[str, EvalSet], task: TaskSpec) -> dict[str, dict]:
    """Each set's metrics, with ``score_ci95``, the 95 % interval of the headline score (classification)."""
    out: dict[str, dict] = {}
    for name, (x, y) in eval_sets.items():
        pred, gold = predict(head, x, regression=task.is_regression).numpy(), y.numpy()
        out[name] = glue_metrics.compute(task.metric, pred, gold)
        ci = glue_metrics.score_interval(task.metric, pred, gold)
        if ci is not None:
            out[name]["score_ci95"] = ci
    return out


def fit(
    *,
    task: TaskSpec,
    head: nn.Module,
    represent: Callable[[torch.Tensor], torch.Tensor],
    targets: torch.Tensor,
    eval_sets: Callable[[], dict[str, EvalSet]],
    config: TrainConfig,
    hider: TextHide | None = None,
    public: Callable[[int], torch.Tensor] | None = None,
    extra_params: list[nn.Parameter] | None = None,
    extra_modules: dict[str, nn.Module] | None = None,
    checkpoint: Path | None = None,
    resume: bool = False,
    progress: bool = True,
    extra_lr: float | None = None,
    lengths: Sequence[int] | None = None,
    bf16: bool = False,
) -> TrainState:
    """Train ``head`` on ``hide(represent(idx))`` and evaluate after every epoch.

    ``represent(idx)`` returns the representations of train examples ``idx``
    (cached rows, or an encoder forward with gradients); ``eval_sets()`` returns
    the unmixed dev representations. ``public(b)`` returns public
    representations for TextHide-inter when they change during training.
    ``lengths`` (token lengths of the train examples, when ``represent`` runs the encoder) turns on
    length-bucketed batches (:mod:`.batching`); ``bf16`` runs ``represent`` under bfloat16 autocast, and
    everything after it (TextHide, head, loss) in float32.
    """
    n = targets.shape[0]
    k = hider.n_private if hider is not None else 1
    if k > min(config.batch_size, n):
        raise PrivnluError(f"k = {k} is larger than the batch size {min(config.batch_size, n)}; use a batch of at least k examples")
    steps_per_epoch = count_batches(n, config.batch_size, k)
    total = steps_per_epoch * config.epochs
    groups = [{"params": list(head.parameters()), "lr": config.lr}]
    if extra_params:
        groups.append({"params": extra_params, "lr": extra_lr or config.lr})
    optimizer = torch.optim.AdamW(groups, lr=config.lr, weight_decay=config.weight_decay, foreach=True)
    scheduler = linear_warmup(optimizer, total, config.warmup_ratio)
    modules = {"head": head, **(extra_modules or {})}
    state = TrainState()
    shuffle = torch.Generator().manual_seed(config.seed if config.seed is not None else int(time.time_ns() % 2**62))
    if checkpoint is not None and resume and ckpt.exists(checkpoint):
        state = _restore(checkpoint, modules, optimizer, scheduler, shuffle, config, hider)
    device = next(head.parameters()).device

    for epoch in range(state.epoch, config.epochs):
        for mod in modules.values():
            mod.train()
        t0, seen, loss_sum = time.time(), 0, 0.0
        bar = tqdm(total=steps_per_epoch, desc=f"epoch {epoch + 1}/{config.epochs}", disable=not progress, leave=False)
        for idx in bucket_batches(lengths, config.batch_size, shuffle, n=n, min_size=k):
            with autocast(device, bf16):
                x = represent(idx)
            x = x.float()
            y = targets[idx].to(x.device)
            if hider is not None:
                hb = hider.hide(x, y, public=public(len(idx)) if public is not None else None)
                x, y = hb.x, hb.y
            loss = task_loss(head(x.to(device)), y.to(device), regression=task.is_regression)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            loss_sum += float(loss.detach()) * len(idx)
            seen += len(idx)
            bar.update(1)
        bar.close()
        evals = eval_sets()
        if hider is not None and config.eval_mask == "pool":
            evals = {name: (hider.mask_only(x), y) for name, (x, y) in evals.items()}
        metrics = evaluate(head, evals, task)
        state.history.append({"epoch": epoch + 1, "train_loss": loss_sum / max(seen, 1), "seconds": time.time() - t0, "eval": metrics})
        state.epoch = epoch + 1
        if progress:  # one plain line per epoch, also in non-terminal logs
            tqdm.write(epoch_line(state.history[-1], config.epochs), file=sys.stderr)
        if checkpoint is not None:
            _save(checkpoint, modules, optimizer, scheduler, shuffle, state, config, hider)
    return state


def epoch_line(h: dict, epochs: int) -> str:
    """``epoch 2/20: train loss 0.6931, dev accuracy 0.6200 (12 s)`` from one history entry."""
    scores = "; ".join(f"{split} " + ", ".join(f"{name} {v:.4f}" for name, v in m.items()
                                         if isinstance(v, (int, float)) and name != "score")
                       for split, m in h["eval"].items())
    return f"epoch {h['epoch']}/{epochs}: train loss {h['train_loss']:.4f}, {scores} ({h['seconds']:.0f} s)"


class TrainCheckpoint(ckpt.Strict):
    """The JSON side of a ``privnlu train`` checkpoint."""

    epoch: Annotated[int, Field(ge=1)]
    history: list[dict[str, JsonValue]]
    config: dict[str, JsonValue]
    secret_stream: ckpt.PCG64State | None
    seeded: bool
    optimizer: ckpt.OptimizerMeta
    scheduler: ckpt.SchedulerState


def _save(path: Path, modules, optimizer, scheduler, shuffle, state: TrainState, config: TrainConfig,
          hider: TextHide | None) -> None:
    """Everything needed to continue after this epoch (:mod:`privnlu.models.checkpoint`). A seeded run also keeps
    its secret stream's position and PyTorch's RNG (dropout), so that it resumes exactly; an unseeded run has no
    secret state to save."""
    seeded = config.seed is not None
    opt_tensors, opt_meta = ckpt.flatten_optimizer(optimizer, "optimizer")
    tensors = {f"modules.{k}.{n}": t for k, m in modules.items() for n, t in m.state_dict().items()}
    tensors.update(opt_tensors)
    tensors["rng.shuffle"] = shuffle.get_state()
    if seeded:
        tensors["rng.torch"] = torch.get_rng_state()
    ckpt.save(path, written_by="train", step=state.epoch, tensors=tensors, state={
        "epoch": state.epoch, "history": state.history, "config": asdict(config), "seeded": seeded,
        "secret_stream": hider.rng.experiment_state() if hider is not None else None,
        "optimizer": opt_meta, "scheduler": scheduler.state_dict()})


def _restore(path: Path, modules, optimizer, scheduler, shuffle, config: TrainConfig, hider: TextHide | None) -> TrainState:
    """Check the checkpoint against this run (settings, model, optimizer) before anything is loaded, then load it."""
    c = ckpt.load(path, written_by="train", state=TrainCheckpoint)
    saved: TrainCheckpoint = c.state
    if not ckpt.same_settings(saved.config, asdict(config)):
        raise PrivnluError(f"checkpoint {c.path} is from a run with other settings; delete it or use another --out")
    if saved.epoch != c.step or len(saved.history) != saved.epoch or saved.epoch > config.epochs:
        raise c.error(f"epoch {saved.epoch} with {len(saved.history)} history entries, of {config.epochs} epochs")
    for k, m in modules.items():
        ckpt.load_tensors(c, f"modules.{k}", m.state_dict())
    shuffle_state = ckpt.rng_state(c, "rng.shuffle", shuffle.get_state())
    torch_rng = ckpt.rng_state(c, "rng.torch", torch.get_rng_state()) if saved.seeded else None
    if (saved.secret_stream is None) != (hider is None or hider.rng.experiment_state() is None):
        raise c.error("the secret stream's position does not match the scheme and seed")
    for k, m in modules.items():
        ckpt.load_module(c, f"modules.{k}", m)
    ckpt.load_optimizer(c, "optimizer", saved.optimizer, optimizer)
    ckpt.load_scheduler(c, saved.scheduler, scheduler)
    shuffle.set_state(shuffle_state)
    if hider is not None:
        hider.rng.restore_experiment_state(saved.secret_stream.model_dump() if saved.secret_stream else None)
    if config.seed is not None and torch_rng is not None:
        torch.set_rng_state(torch_rng)
    return TrainState(epoch=saved.epoch, history=[dict(h) for h in saved.history], resumed_epochs=saved.epoch)
