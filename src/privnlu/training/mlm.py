"""Privacy-adaptive masked-LM pretraining (Qu et al. 2021, section 3.4, Tables 6-7).

Starting point. Any encoder: a BERT-style MLM head is built and *tied* to the
input embedding table ``E`` (V, n): ``logits = LN(gelu(W h + b)) E^T + c``.
The packaged MiniLM has no MLM head, so the head is first warmed up on clean
text (encoder frozen, standard MLM), and its masked-token accuracy on held-out
text is reported before and after.

Adaptation. MLM continues on a public corpus whose inputs are privatized on the
fly with the fine-tuning eta (``mechanism='text'``: M_txt ids; ``'rep'``: M_rep
vectors via ``inputs_embeds``). The user-side embedding table is frozen
(stop-gradient; the tied output layer therefore too), so the user's mechanism
and its privacy level are unchanged. About ``mask_prob`` of the regular tokens
of each sequence (at least one) are replaced by [MASK] (always [MASK]; BERT's
80/10/10 rule is not used). At a masked position with original token ``x``:

* ``vanilla``:     target = one-hot of the perturbed token ``M_txt(x)``;
* ``probability``: target = the empirical distribution of ``draws`` (10)
  independent perturbations ``M_txt(x)`` (soft cross-entropy);
* ``denoising``:   target = one-hot of ``x`` (the public original).

Checkpoints. Every ``checkpoint_every`` steps (and at each phase end) the run
writes its checkpoint atomically (``checkpoint.safetensors`` and ``checkpoint.json``,
:mod:`privnlu.models.checkpoint`; never a pickle). The data order, masks, dropout and (with a
seed) the noise of step ``t`` are functions of (seed, phase, t) only, so a
resumed run equals an uninterrupted one; without a seed, noise is secure and a
resumed run is a different but equally valid draw.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Callable

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field, JsonValue
from torch import nn

from ..choices import MLM_INPUT_MECHANISMS, MLM_OBJECTIVES
from ..data import load_public_corpus
from ..errors import PrivnluError
from ..io import is_pickle, write_atomic, write_json_atomic
from ..mechanisms.dchi import TokenSpace, m_txt, privatized_positions
from ..mechanisms.dchi_modes import mechanism as dchi_mechanism
from ..models import checkpoint
from ..models.checkpoint import Checkpoint
from ..models.precision import autocast, resolve_bf16
from ..rng import SecretGenerator, derive_seed, seeded_torch
from ..schemas.paths import is_local_path, path_ref
from .batching import bucket_batches, count_batches, pad
from .losses import soft_cross_entropy
from .settings import PretrainConfig  # noqa: F401 (re-exported)
from .trainer import linear_warmup

OBJECTIVES = MLM_OBJECTIVES
INPUT_MECHANISMS = MLM_INPUT_MECHANISMS
PHASES = ("warmup", "adapt")
EVAL_MASK_SEED = 1234  # masking of the held-out evaluation text (public, not secret)


HEAD_FILE = "mlm_head.safetensors"
WARM_HEAD_FILE = "mlm_head_warm.safetensors"


def save_mlm_head(head: nn.Module, path: Path) -> Path:
    """The head's own weights (dense, norm, bias; not the tied table) as safetensors, written atomically."""
    from ..models.saving import save_weights

    return write_atomic(path, lambda p: save_weights(head, p, "mlm_head"))


def load_mlm_head(path: str | Path) -> dict[str, torch.Tensor]:
    """A head written by :func:`save_mlm_head`. A head an older privnlu wrote with ``torch.save`` (``*.pt``) is read
    with ``weights_only=True``, which runs no code from the file; nothing else is ever unpickled."""
    path = Path(path)
    if not path.is_file():
        raise PrivnluError(f"--init-head {path}: no such file")
    try:
        if is_pickle(path):
            return torch.load(path, map_location="cpu", weights_only=True)["head"]
        from safetensors.torch import load_file

        return load_file(str(path))
    except Exception:
        raise PrivnluError(f"--init-head {path} is not an MLM head written by privnlu dchi pretrain "
                           f"(OUT/{WARM_HEAD_FILE} or OUT/{HEAD_FILE})") from None


class TiedMLMHead(nn.Module):
    """BERT's MLM head with the decoder tied to (sharing) the input embedding table, which it does not own."""

    def __init__(self, embeddings: nn.Embedding, hidden: int, *, eps: float = 1e-12) -> None:
        super().__init__()
        dim = embeddings.weight.shape[1]
        self.dense = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.bias = nn.Parameter(torch.zeros(embeddings.weight.shape[0]))
        self._table = [embeddings]  # a list: not registered, so not in parameters() or state_dict()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(F.gelu(self.dense(h))) @ self._table[0].weight.T + self.bias


def mlm_targets(objective: str, original: torch.Tensor, perturbed: torch.Tensor | None, draws: torch.Tensor | None,
                vocab_size: int) -> torch.Tensor:
    """Soft targets (M, V) for M masked positions (see the module docstring)."""
    if objective == "denoising":
        return F.one_hot(original, vocab_size).float()
    if objective == "vanilla":
        assert perturbed is not None
        return F.one_hot(perturbed, vocab_size).float()
    if objective == "probability":
        assert draws is not None
        return F.one_hot(draws, vocab_size).float().mean(1)
    raise PrivnluError(f"unknown objective '{objective}'; choose one of {', '.join(OBJECTIVES)}")


def mlm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-mean_m sum_v t_mv log softmax(z_m)_v`` over masked positions."""
    return soft_cross_entropy(logits, targets)


def select_masked(eligible: torch.Tensor, prob: float, generator: torch.Generator) -> torch.Tensor:
    """Each eligible position with probability ``prob``; a row with eligible positions gets at least one."""
    scores = torch.rand(eligible.shape, generator=generator).to(eligible.device)  # the same draws on any device
    scores[~eligible] = -1.0
    masked = (scores < prob) & eligible
    first = scores.argmax(1)
    rows = torch.arange(len(eligible), device=eligible.device)
    none = ~masked.any(1) & eligible.any(1)
    masked[rows[none], first[none]] = True
    return masked


@dataclass
class MLMBatch:
    attention_mask: torch.Tensor
    masked: torch.Tensor  # (B, L) bool
    targets: torch.Tensor  # (M, V)
    original: torch.Tensor  # (M,)
    input_ids: torch.Tensor | None = None
    inputs_embeds: torch.Tensor | None = None


def make_batch(space: TokenSpace, ids: torch.Tensor, attention_mask: torch.Tensor, *, objective: str,
               eta: float | None, mechanism: str, rng: SecretGenerator | torch.Generator, generator: torch.Generator,
               mask_prob: float, draws: int, mask_id: int) -> MLMBatch:
    """Mask, privatize (``eta=None``: clean) and build the targets of one batch, on the device of ``space`` and
    ``ids`` (the masks are drawn from the CPU ``generator`` either way)."""
    masked = select_masked(privatized_positions(space, ids, attention_mask), mask_prob, generator)
    original = ids[masked]
    perturbed, draw_ids, embeds, inp = original, None, None, None
    if eta is None:
        inp = ids.clone()
        if objective == "probability":
            draw_ids = original.unsqueeze(1).repeat(1, draws)
    else:
        mech = dchi_mechanism(mechanism)
        if mech.sends_tokens:
            inp = mech.tokens(space, ids, eta, rng, attention_mask)
            perturbed = inp[masked]
        else:
            embeds = mech.tokens(space, ids, eta, rng, attention_mask)
            if objective == "vanilla":
                perturbed = space.nearest(embeds[masked])
        if objective == "probability":
            draw_ids = m_txt(space, original.unsqueeze(1).repeat(1, draws), eta, rng)
    if embeds is not None:
        embeds[masked] = space.embeddings[mask_id]
    else:
        assert inp is not None
        inp[masked] = mask_id
    targets = mlm_targets(objective, original, perturbed, draw_ids, space.vocab_size)
    return MLMBatch(attention_mask, masked, targets, original, inp, embeds)


def mlm_logits(model: nn.Module, head: TiedMLMHead, batch: MLMBatch, *, bf16: bool = False) -> torch.Tensor:
    """Float32 head logits (M, V) at the masked positions; the batch (built on the CPU) moves to the model's device.
    ``bf16``: encoder and head under bfloat16 autocast."""
    dev = next(head.parameters()).device
    move = lambda t: None if t is None else t.to(dev)
    with autocast(dev, bf16):
        out = model(input_ids=move(batch.input_ids), inputs_embeds=move(batch.inputs_embeds),
                    attention_mask=move(batch.attention_mask))
        return head(out.last_hidden_state[move(batch.masked)]).float()


class Pretrainer:
    """Warm-up (clean, head only) then privatized adaptation, with atomic checkpoints and resume."""

    def __init__(self, config: PretrainConfig, out_dir: str | Path, *, model: str | Path | None = None,
                 init_head: str | Path | None = None, texts: list[str] | None = None,
                 log: Callable[[str], None] | None = None, device: str = "cpu", bf16: str | bool = "auto",
                 torch_noise: bool | None = None) -> None:
        """``torch_noise``: build each batch on ``device`` with the simulated noise from a seeded
        ``torch.Generator`` there (default: on an accelerator); else on the CPU from a :class:`SecretGenerator`."""
        from ..models import load_encoder

        self.config, self.out = config, Path(out_dir)
        checkpoint.refuse_legacy(self.out / "checkpoint.pt")  # before any work; never opened
        self.log = log or (lambda _m: None)
        enc = load_encoder(model, device=device)
        self.model_name = str(model or "packaged MiniLM")
        self.base_model = str(model) if model else None
        self.tokenizer, self.model = enc.tokenizer, enc.model
        self.space = TokenSpace.from_model(self.model, self.tokenizer)
        self.device = torch.device(device)
        self.torch_noise = self.device.type != "cpu" if torch_noise is None else torch_noise
        self.batch_space = self.space.to(self.device) if self.torch_noise else self.space
        emb = self.model.get_input_embeddings()
        emb.weight.requires_grad_(False)  # user side: stop-gradient
        with seeded_torch(None if config.seed is None else derive_seed(config.seed, 3)):  # head initialisation
            self.head = TiedMLMHead(emb, self.model.config.hidden_size,
                                    eps=getattr(self.model.config, "layer_norm_eps", 1e-12)).to(device)
        self.init_head = str(init_head) if init_head else None
        if init_head:
            state = load_mlm_head(init_head)
            try:
                self.head.load_state_dict(state)
            except RuntimeError:
                raise PrivnluError(f"--init-head {init_head} does not fit this model (another encoder's head?)") from None
        texts = texts if texts is not None else load_public_corpus(config.corpus, config.corpus_limit).texts_a
        if len(texts) < config.eval_size + config.batch_size:
            raise PrivnluError(f"the corpus has {len(texts)} texts; need at least eval-size + batch-size = "
                               f"{config.eval_size + config.batch_size}")
        tok = self.tokenizer(texts, truncation=True, max_length=config.max_length)["input_ids"]
        self.eval_ids = [torch.tensor(x) for x in tok[-config.eval_size:]]  # held out
        self.train_ids = [torch.tensor(x) for x in tok[: -config.eval_size]]
        self.train_lengths = [len(x) for x in self.train_ids]
        self.bf16 = resolve_bf16(bf16, device)
        self.mask_id = int(self.tokenizer.mask_token_id)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.secure = SecretGenerator()
        self._perm: tuple[tuple[int, int], list[torch.Tensor]] | None = None

    # -- phases ------------------------------------------------------------
    def phase_steps(self) -> dict[str, int]:
        return {"warmup": 0 if self.init_head else self.config.warmup_steps, "adapt": self.config.steps}

    def _params(self, phase: str) -> list[dict]:
        head = [{"params": list(self.head.parameters()), "lr": self.config.head_lr}]
        if phase == "warmup":
            return head
        body = [p for p in self.model.parameters() if p.requires_grad]
        return [{"params": body, "lr": self.config.lr}] + head

    def _set_trainable(self, phase: str) -> None:
        emb = self.model.get_input_embeddings().weight
        for p in self.model.parameters():
            p.requires_grad_(phase == "adapt" and p is not emb)

    # -- data --------------------------------------------------------------
    def _batch_ids(self, phase: int, step: int, data_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch ``step`` of the phase: length-bucketed epochs whose order is a function of (seed, phase, epoch)."""
        per_epoch = count_batches(len(self.train_ids), self.config.batch_size)
        epoch = step // per_epoch
        if self._perm is None or self._perm[0] != (phase, epoch):
            g = torch.Generator().manual_seed(derive_seed(data_seed, phase, epoch, 7))
            self._perm = ((phase, epoch), bucket_batches(self.train_lengths, self.config.batch_size, g))
        idx = self._perm[1][step % per_epoch].tolist()
        return pad([self.train_ids[i] for i in idx], self.pad_id)

    def _noise_rng(self, *parts: int) -> SecretGenerator | torch.Generator:
        """The simulated mechanism's noise for step ``parts``: the CPU's :class:`SecretGenerator`, or, on an
        accelerator, a ``torch.Generator`` of the device (the corpus is public: no secret rests on these draws)."""
        if self.torch_noise:
            seed = (derive_seed(self.config.seed, *parts) if self.config.seed is not None
                    else int(self.secure.words(1)[0]))
            return torch.Generator(device=self.device).manual_seed(seed)
        if self.config.seed is None:
            return self.secure
        return SecretGenerator(derive_seed(self.config.seed, *parts), warn=False)

    def _batch(self, ids: torch.Tensor, mask: torch.Tensor, **kw) -> MLMBatch:
        return make_batch(self.batch_space, ids.to(self.device), mask.to(self.device), mask_id=self.mask_id, **kw)

    # -- one step ------------------------------------------------------------
    def _step(self, phase: str, step: int, data_seed: int, opt, sched) -> float:
        c = self.config
        p = PHASES.index(phase)
        ids, mask = self._batch_ids(p, step, data_seed)
        gen = torch.Generator().manual_seed(derive_seed(data_seed, p, step, 1))
        batch = self._batch(ids, mask, objective="denoising" if phase == "warmup" else c.objective,
                            eta=None if phase == "warmup" else c.eta, mechanism=c.mechanism,
                            rng=self._noise_rng(p, step), generator=gen, mask_prob=c.mask_prob, draws=c.draws)
        with seeded_torch(derive_seed(data_seed, p, step, 2)):  # dropout
            self.model.train(phase == "adapt")
            self.head.train()
            logits = mlm_logits(self.model, self.head, batch, bf16=self.bf16)
            loss = mlm_loss(logits, batch.targets.to(logits.device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
        opt.step()
        sched.step()
        return float(loss.detach())

    @torch.no_grad()
    def masked_accuracy(self, eta: float | None) -> float:
        """Accuracy at predicting the ORIGINAL token at masked positions of the held-out text (input clean or privatized)."""
        self.model.eval()
        self.head.eval()
        hits = total = 0
        gen = torch.Generator().manual_seed(EVAL_MASK_SEED)
        rng = self._noise_rng(99, 0)
        for s in range(0, len(self.eval_ids), 64):
            ids, mask = pad(self.eval_ids[s : s + 64], self.pad_id)
            batch = self._batch(ids, mask, objective="denoising", eta=eta, mechanism=self.config.mechanism,
                                rng=rng, generator=gen, mask_prob=self.config.mask_prob, draws=1)
            pred = mlm_logits(self.model, self.head, batch, bf16=self.bf16).argmax(-1).cpu()
            hits += int((pred == batch.original.cpu()).sum())
            total += len(batch.original)
        return hits / max(total, 1)

    # -- the run -------------------------------------------------------------
    def run(self, *, resume: bool = False, stop_after: int | None = None) -> dict:
        """Run (or continue) the schedule; ``stop_after``: at most this many steps in this call. Returns the record."""
        ckpt = self.out / "checkpoint.pt"
        checkpoint.refuse_legacy(ckpt)
        if checkpoint.exists(ckpt) and not resume:
            raise PrivnluError(f"{checkpoint.files(ckpt)[1]} exists: pass --resume to continue that run, or choose "
                               "another --out")
        state = {"phase": 0, "step": 0, "losses": {ph: [] for ph in PHASES}, "evals": {},
                 "data_seed": self.config.seed if self.config.seed is not None else int(self.secure.words(1)[0] >> np.uint64(1))}
        saved: Checkpoint | None = None
        if resume and checkpoint.exists(ckpt):
            saved = _load(ckpt)
            meta: PretrainCheckpoint = saved.state
            if not checkpoint.same_settings(meta.config, asdict(self.config)) or meta.init_head != self.init_head:
                raise PrivnluError(f"{ckpt} is from a run with other settings; use another --out")
            state = self._check_progress(saved, meta.progress)
            checkpoint.load_tensors(saved, "model", self.model.state_dict())
            checkpoint.load_tensors(saved, "head", self.head.state_dict())
            checkpoint.load_module(saved, "model", self.model)
            checkpoint.load_module(saved, "head", self.head)
        t0, done_now = time.time(), 0
        if "clean_before" not in state["evals"]:
            state["evals"]["clean_before"] = self.masked_accuracy(None)
            self.log(f"masked-token accuracy, clean held-out text, before warm-up: {state['evals']['clean_before']:.4f}")
        budget = self.phase_steps()
        while state["phase"] < len(PHASES):
            phase = PHASES[state["phase"]]
            total = budget[phase]
            self._set_trainable(phase)
            opt = torch.optim.AdamW(self._params(phase), weight_decay=0.01)
            sched = linear_warmup(opt, max(total, 1), 0.1)
            if saved is not None and saved.state.progress.phase == state["phase"] and saved.state.optimizer is not None:
                checkpoint.load_optimizer(saved, "optimizer", saved.state.optimizer, opt)
                checkpoint.load_scheduler(saved, saved.state.scheduler, sched)
            saved = None
            while state["step"] < total:
                if stop_after is not None and done_now >= stop_after:
                    self._save(ckpt, state, opt, sched)
                    return self._record(state, finished=False, seconds=time.time() - t0)
                loss = self._step(phase, state["step"], state["data_seed"], opt, sched)
                state["losses"][phase].append(loss)
                state["step"] += 1
                done_now += 1
                if state["step"] % self.config.checkpoint_every == 0 or state["step"] == total:
                    recent = state["losses"][phase][-self.config.checkpoint_every:]
                    self.log(f"{phase} step {state['step']}/{total}: mean loss {sum(recent) / len(recent):.4f}")
                    self._save(ckpt, state, opt, sched)
            self._end_phase(phase, state)
            state["phase"] += 1
            state["step"] = 0
            self._save(ckpt, state, None, None)
        return self._finish(state, time.time() - t0)

    def _end_phase(self, phase: str, state: dict) -> None:
        if phase == "warmup":
            state["evals"]["clean_after_warmup"] = self.masked_accuracy(None)
            state["evals"]["private_after_warmup"] = self.masked_accuracy(self.config.eta)
            save_mlm_head(self.head, self.out / WARM_HEAD_FILE)
            self.log(f"after warm-up: clean {state['evals']['clean_after_warmup']:.4f}, "
                     f"privatized (eta={self.config.eta:g}) {state['evals']['private_after_warmup']:.4f}")
        else:
            state["evals"]["clean_after_adapt"] = self.masked_accuracy(None)
            state["evals"]["private_after_adapt"] = self.masked_accuracy(self.config.eta)
            self.log(f"after adaptation: clean {state['evals']['clean_after_adapt']:.4f}, "
                     f"privatized {state['evals']['private_after_adapt']:.4f}")

    def _save(self, path: Path, state: dict, opt, sched) -> None:
        """The run's state after ``state['step']`` steps of phase ``state['phase']`` (:mod:`privnlu.models.checkpoint`);
        between phases without an optimizer."""
        tensors = {f"model.{n}": t for n, t in self.model.state_dict().items()}
        tensors.update({f"head.{n}": t for n, t in self.head.state_dict().items()})
        meta = {"config": asdict(self.config), "init_head": self.init_head, "progress": state, "optimizer": None,
                "scheduler": None}
        if opt is not None:
            opt_tensors, meta["optimizer"] = checkpoint.flatten_optimizer(opt, "optimizer")
            tensors.update(opt_tensors)
            meta["scheduler"] = sched.state_dict()
        steps = sum(len(v) for v in state["losses"].values())
        checkpoint.save(path, written_by="pretrain", step=steps, tensors=tensors, state=meta)

    def _check_progress(self, saved: Checkpoint, progress: "PretrainProgress") -> dict:
        """The saved progress as the run keeps it, after checking it against this run's schedule."""
        budget = self.phase_steps()
        state = {"phase": progress.phase, "step": progress.step, "data_seed": progress.data_seed,
                 "losses": {ph: [float(x) for x in progress.losses.get(ph, [])] for ph in PHASES},
                 "evals": dict(progress.evals)}
        if set(progress.losses) != set(PHASES) or saved.step != sum(len(v) for v in state["losses"].values()):
            raise saved.error("the losses do not match the step count")
        for i, ph in enumerate(PHASES):
            done = len(state["losses"][ph])
            if (i < progress.phase and done != budget[ph]) or (i == progress.phase and done != progress.step) \
                    or (i > progress.phase and done) or done > budget[ph]:
                raise saved.error(f"phase {ph}: {done} steps recorded, at step {progress.step} of phase "
                                  f"{progress.phase}, of {budget[ph]} steps")
        if self.config.seed is not None and progress.data_seed != self.config.seed:
            raise saved.error("the data order's seed is not the run's --seed")
        return state

    def _finish(self, state: dict, seconds: float) -> dict:
        from ..model_folder.export import export_pretrained_encoder

        rec = self._record(state, finished=True, seconds=seconds)
        shutil.rmtree(self.out / ".encoder.tmp", ignore_errors=True)  # left by an older privnlu's interrupted run
        # save_pretrained (safetensors) + tokenizer, no local path, a model card; staged and renamed into place
        export_pretrained_encoder(self.out / "encoder", model=self.model, tokenizer=self.tokenizer, record=rec,
                                  base_model=self.base_model)
        save_mlm_head(self.head, self.out / HEAD_FILE)
        write_json_atomic(self.out / "pretrain.json", rec)
        return rec

    def _record(self, state: dict, *, finished: bool, seconds: float) -> dict:
        return {"kind": "dchi_pretrain", "model": path_ref(self.model_name, self.out) if is_local_path(self.model_name) else self.model_name, **asdict(self.config), "init_head": self.init_head,
                "finished": finished, "bf16": self.bf16, "evals": dict(state["evals"]),
                **({"device": _device_name(self.device), "noise": "torch.Generator of the device, seeded per step"}
                   if self.torch_noise else {}),
                "loss_first": {ph: _mean(v[: self.config.checkpoint_every]) for ph, v in state["losses"].items()},
                "loss_last": {ph: _mean(v[-self.config.checkpoint_every:]) for ph, v in state["losses"].items()},
                "steps_done": {ph: len(v) for ph, v in state["losses"].items()}, "seconds_this_call": seconds,
                "encoder_dir": "encoder" if finished else None}  # relative to the record's folder: no local path


def _device_name(device: torch.device) -> str:
    """``cuda (NVIDIA H200)``: the device type and, for a GPU, its model (no host name, no serial)."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


def _mean(v: list[float]) -> float | None:
    return sum(v) / len(v) if v else None


class PretrainProgress(checkpoint.Strict):
    """Where a ``privnlu dchi pretrain`` run stands: phase, step, the losses so far, evaluations, data seed."""

    phase: Annotated[int, Field(ge=0, le=len(PHASES))]
    step: Annotated[int, Field(ge=0)]
    losses: dict[str, list[checkpoint.Recorded]]
    evals: dict[str, Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]]
    data_seed: Annotated[int, Field(ge=0, lt=2**64)]


class PretrainCheckpoint(checkpoint.Strict):
    """The JSON side of a ``privnlu dchi pretrain`` checkpoint."""

    config: dict[str, JsonValue]
    init_head: str | None
    progress: PretrainProgress
    optimizer: checkpoint.OptimizerMeta | None
    scheduler: checkpoint.SchedulerState | None


def _load(path: Path) -> Checkpoint:
    """The checkpoint pair of ``path`` (OUT/checkpoint.safetensors and OUT/checkpoint.json), checked; never a pickle."""
    saved = checkpoint.load(path, written_by="pretrain", state=PretrainCheckpoint)
    if (saved.state.optimizer is None) != (saved.state.scheduler is None):
        raise saved.error("an optimizer without its scheduler")
    return saved
