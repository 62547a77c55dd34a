"""Privacy-constrained fine-tuning (Qu et al. 2021, section 3.3, Figure 1, Tables 4-5).

The user privatizes each example ONCE on the device and sends the result; the
provider trains (for any number of epochs) and evaluates on privatized input
only, and never updates the user-side parts. Four modes:

* ``null``: no privacy; the provider fine-tunes everything on clean token ids.
* ``sequence``: the user-side encoder (frozen) computes ``h(x)`` and sends
  ``M_seq = h(x) + N``, N in R^d; the provider trains a head on it.
* ``token``: the user-side embedding layer ``phi`` (frozen) gives ``M_rep``,
  ``phi(x_i) + N_i`` for each regular token; the provider adds the public
  [CLS]/[SEP] embeddings and the position (and segment) embeddings and
  fine-tunes the rest of the encoder and the head. (Special tokens are never
  noised by ``m_rep``, so privatizing the framed sequence is the same thing.)
* ``text``: the user sends ``M_txt`` text; the provider fine-tunes everything,
  its own copy of the embedding table included. (We pass the privatized token
  ids rather than decoding and re-tokenizing the text; re-tokenization can only
  split a WordPiece differently, which we do not model.)

Encoders: ``transformer`` (a Hugging Face BERT-style model, default the
packaged MiniLM, linear classifier on the pooled output) or ``bilstm``
(:class:`~privnlu.models.bilstm.BiLSTMEncoder` on the same WordPiece table;
``sequence`` mode needs a pretrained user-side encoder, so it is refused for
the BiLSTM). Noise comes from a :class:`~privnlu.rng.SecretGenerator`.
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Callable

import torch
from pydantic import Field, JsonValue
from torch import nn

from ..choices import FINETUNE_ENCODERS, FINETUNE_MODES
from ..data import TextDataset, get_task
from ..data import metrics as glue_metrics
from ..data.tasks import TaskSpec
from ..errors import PrivnluError
from ..io import write_secret
from ..mechanisms.dchi import TokenSpace
from ..mechanisms.dchi_modes import FinetuneMode, finetune_mode
from ..models import MLPHead, load_encoder
from ..models import checkpoint as ckpt
from ..models.bilstm import BiLSTMEncoder
from ..models.heads import Classifier  # noqa: F401 (re-exported)
from ..models.encoder import SentenceEncoder
from ..models.precision import resolve_bf16
from ..model_folder.dchi_inputs import Split, forward, logits_in_order, privatize_split, tokenize_texts
from ..rng import SecretGenerator, derive_seed, seeded_torch
from ..schemas import shareable
from ..schemes import for_finetune_mode
from .batching import bucket_batches, count_batches
from .losses import targets_from_labels, task_loss
from .settings import FinetuneConfig, GridSettings  # noqa: F401 (re-exported)
from .trainer import linear_warmup

MODES = FINETUNE_MODES
ENCODERS = FINETUNE_ENCODERS


@dataclass
class Prepared:
    """Everything the runs of one task share: the encoder, the user-side token space, tokenized splits."""

    task: TaskSpec
    encoder: SentenceEncoder
    space: TokenSpace
    train: Split
    dev: Split
    max_length: int
    model: str
    pair: bool = False


def prepare(task: str, *, model: str | Path | None = None, max_length: int = 128, train_limit: int | None = None,
            dev_limit: int | None = None, data_dir: str | None = None, pooling: str = "cls",
            sequence_features: bool = False, device: str = "cpu") -> Prepared:
    """Load the task (the first ``train_limit`` / ``dev_limit`` examples), the encoder, and tokenize."""
    if max_length < 4:
        raise PrivnluError(f"--max-length must be at least 4, not {max_length}")
    spec = get_task(task)
    enc = load_encoder(model, pooling=pooling, device=device)
    space = TokenSpace.from_model(enc.model, enc.tokenizer)
    splits, pair = [], False
    for split, limit in (("train", train_limit), (spec.eval_splits[0], dev_limit)):
        ds = spec.load(split, data_dir).head(limit)
        pair = pair or ds.is_pair
        splits.append(_tokenize(enc, ds, max_length, sequence_features))
    return Prepared(spec, enc, space, splits[0], splits[1], max_length, str(model or "packaged MiniLM"), pair)


def _tokenize(enc: SentenceEncoder, ds: TextDataset, max_length: int, features: bool) -> Split:
    if len(ds) == 0:
        raise PrivnluError(f"{ds.name}/{ds.split} has no examples")
    labels = torch.tensor(ds.labels, dtype=torch.float32 if ds.is_regression else torch.long)
    return tokenize_texts(enc.tokenizer, ds.texts_a, ds.texts_b, labels, max_length=max_length,
                          features_encoder=enc if features else None)


# -- the user side ----------------------------------------------------------

# -- the provider side -------------------------------------------------------

def build_model(prep: Prepared, config: FinetuneConfig) -> tuple[nn.Module, list[dict]]:
    """The provider's model and its optimizer parameter groups; user-side parts get ``requires_grad=False``."""
    num_out = model_outputs(prep.task)
    device = prep.encoder.device
    mode = finetune_mode(config.mode)
    if mode.on_representation:
        head = MLPHead(prep.encoder.dim, num_out, hidden=(prep.encoder.dim,), dropout=config.dropout).to(device)
        return head, [{"params": list(head.parameters()), "lr": config.head_lr}]
    if config.encoder == "transformer":
        body = copy.deepcopy(prep.encoder.model)
        dim = prep.encoder.dim
    else:
        body = BiLSTMEncoder(prep.space.embeddings, hidden=config.lstm_hidden, dropout=config.dropout,
                             pad_id=prep.encoder.tokenizer.pad_token_id or 0)
        dim = body.dim
    model = Classifier(body, dim, num_out, pooling=prep.encoder.pooling, dropout=config.dropout).to(device)
    if mode.sends_embeddings:
        body.get_input_embeddings().weight.requires_grad_(False)  # phi stays on the user side
    body_params = [p for p in body.parameters() if p.requires_grad]
    return model, [{"params": body_params, "lr": config.body_lr},
                   {"params": list(model.out.parameters()), "lr": config.head_lr}]


@torch.no_grad()
def evaluate(model: nn.Module, payload: list[torch.Tensor], split: Split, task: TaskSpec, mode: str | FinetuneMode,
             pad_id: int,
             batch_size: int = 128, bf16: bool = False) -> dict[str, float]:
    """Dev metrics (of :func:`logits_in_order`)."""
    logits = logits_in_order(model, payload, split.types, mode, pad_id, batch_size=batch_size, bf16=bf16)
    pred = logits.squeeze(-1) if task.is_regression else logits.argmax(-1)
    return glue_metrics.compute(task.metric, pred.numpy(), split.labels.numpy())


@dataclass
class FinetuneResult:
    record: dict
    model: nn.Module


Payloads = tuple[list[torch.Tensor], list[torch.Tensor]]


def privatize(prep: Prepared, mode: str | FinetuneMode, eta: float | None, rng: SecretGenerator) -> Payloads:
    """The user side: privatize the train and dev examples once."""
    pad_id = prep.encoder.tokenizer.pad_token_id or 0
    return (privatize_split(prep.train, mode, prep.space, eta, rng, pad_id),
            privatize_split(prep.dev, mode, prep.space, eta, rng, pad_id))


def finetune(prep: Prepared, config: FinetuneConfig, *, rng: SecretGenerator | None = None,
             payloads: Payloads | None = None, log: Callable[[str], None] | None = None,
             checkpoint: Path | None = None) -> FinetuneResult:
    """Train the provider model on privatized train data; evaluate on privatized dev data after each epoch.

    ``payloads`` (from :func:`privatize` with the same mode and eta) lets several encoders share one
    privatized copy of the data; otherwise it is drawn here from ``rng``. With ``checkpoint``, the state after
    every epoch is written there atomically and a later call with the same settings (and the same payloads,
    see :func:`load_or_privatize`) continues from it.
    """
    pad_id = prep.encoder.tokenizer.pad_token_id or 0
    t0 = time.time()
    train_x, dev_x = payloads or privatize(prep, config.mode, config.eta, rng or SecretGenerator())
    privatize_s = time.time() - t0
    targets = targets_from_labels(prep.train.labels, model_outputs(prep.task), regression=prep.task.is_regression)
    n = len(train_x)
    lengths = None if finetune_mode(config.mode).on_representation else [len(x) for x in train_x]
    bf16 = resolve_bf16(config.bf16, prep.encoder.device)
    steps = count_batches(n, config.batch_size) * config.epochs
    shuffle = torch.Generator().manual_seed(config.seed if config.seed is not None else time.time_ns() % 2**62)
    history: list[dict] = []
    restored = 0  # epochs an earlier call trained (their seconds count towards the record's)
    with seeded_torch(None if config.seed is None else derive_seed(config.seed, 5)):  # initialisation, dropout
        model, groups = build_model(prep, config)
        opt = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
        sched = linear_warmup(opt, steps, config.warmup_ratio)
        parts = {"model": model, "optimizer": opt, "scheduler": sched}
        ident = {"config": asdict(config), "task": prep.task.name, "train_size": n, "encoder_name": prep.model}
        if checkpoint is not None and ckpt.exists(checkpoint):
            history = _restore(checkpoint, ident, parts, shuffle)
            restored = len(history)
        model.train()
        for epoch in range(len(history), config.epochs):
            t1, loss_sum = time.time(), 0.0
            for idx in bucket_batches(lengths, config.batch_size, shuffle, n=n):
                logits = forward(model, train_x, prep.train.types, idx, config.mode, pad_id, bf16)
                loss = task_loss(logits, targets[idx].to(logits.device), regression=prep.task.is_regression)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                loss_sum += float(loss.detach()) * len(idx)
            metrics = evaluate(model, dev_x, prep.dev, prep.task, config.mode, pad_id, bf16=bf16)
            history.append({"epoch": epoch + 1, "train_loss": loss_sum / n, "seconds": time.time() - t1, "eval": metrics})
            if log:
                log(f"{prep.task.name} {config.encoder}/{config.mode} eta={config.eta} epoch {epoch + 1}: "
                    f"loss {loss_sum / n:.4f}, dev score {metrics['score']:.2f}")
            if checkpoint is not None:
                _save(checkpoint, ident, parts, shuffle, history)
    record = {
        "kind": "dchi_finetune", "task": prep.task.name, "metric": prep.task.metric,
        "eval_split": prep.task.eval_splits[0], "model": prep.model, **asdict(config),
        "body_lr": config.body_lr, "bf16_used": bf16, "max_length": prep.max_length, "train_size": n, "dev_size": len(dev_x),
        "score": history[-1]["eval"]["score"], "metrics": history[-1]["eval"], "history": history,
        "majority": glue_metrics.majority(prep.task.metric, prep.train.labels, prep.dev.labels,
                                          regression=prep.task.is_regression),
        "privatize_seconds": privatize_s,
        "seconds": time.time() - t0 + sum(h["seconds"] for h in history[:restored]),
    }
    return FinetuneResult(record, model)


class FinetuneCheckpoint(ckpt.Strict):
    """The JSON side of a ``privnlu dchi finetune`` checkpoint."""

    config: dict[str, JsonValue]
    task: str
    train_size: Annotated[int, Field(ge=0)]
    encoder_name: str | None
    history: list[dict[str, JsonValue]]
    seeded: bool
    optimizer: ckpt.OptimizerMeta
    scheduler: ckpt.SchedulerState


def _save(path: Path, ident: dict, parts: dict, shuffle: torch.Generator, history: list[dict]) -> None:
    """The state after ``len(history)`` epochs (:mod:`privnlu.models.checkpoint`)."""
    opt_tensors, opt_meta = ckpt.flatten_optimizer(parts["optimizer"], "optimizer")
    tensors = {f"model.{n}": t for n, t in parts["model"].state_dict().items()}
    tensors.update(opt_tensors)
    tensors["rng.shuffle"] = shuffle.get_state()
    tensors["rng.torch"] = torch.get_rng_state()
    ckpt.save(path, written_by="finetune", step=len(history), tensors=tensors, state={
        **ident, "history": history, "seeded": ident["config"]["seed"] is not None, "optimizer": opt_meta,
        "scheduler": parts["scheduler"].state_dict()})


def _restore(path: Path, ident: dict, parts: dict, shuffle: torch.Generator) -> list[dict]:
    """Check a fine-tuning checkpoint against this run, then load it into ``parts``; returns the history of the
    finished epochs."""
    c = ckpt.load(path, written_by="finetune", state=FinetuneCheckpoint)
    saved: FinetuneCheckpoint = c.state
    if not ckpt.same_settings({k: getattr(saved, k) for k in ident}, ident):
        raise PrivnluError(f"checkpoint {c.path} is from a run with other settings; delete it or use another --out")
    if len(saved.history) != c.step or c.step > int(ident["config"]["epochs"]):
        raise c.error(f"step {c.step} with {len(saved.history)} history entries")
    ckpt.load_tensors(c, "model", parts["model"].state_dict())
    shuffle_state = ckpt.rng_state(c, "rng.shuffle", shuffle.get_state())
    torch_rng = ckpt.rng_state(c, "rng.torch", torch.get_rng_state())
    ckpt.load_module(c, "model", parts["model"])
    ckpt.load_optimizer(c, "optimizer", saved.optimizer, parts["optimizer"])
    ckpt.load_scheduler(c, saved.scheduler, parts["scheduler"])
    shuffle.set_state(shuffle_state)
    if ident["config"]["seed"] is not None:  # dropout continues exactly in a seeded run
        torch.set_rng_state(torch_rng)
    return [dict(h) for h in saved.history]


def load_or_privatize(prep: Prepared, mode: str, eta: float | None, rng: SecretGenerator, path: Path) -> Payloads:
    """The privatized train and dev payloads of (mode, eta), privatized once: read from ``path`` when an earlier,
    interrupted call wrote them, else drawn and written there (mode 0600). Resuming must reuse them: privatizing
    the same examples again would release a second noisy copy of each and spend the privacy budget twice."""
    if path.exists():
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
        except Exception:
            raise PrivnluError(f"{path} is corrupt; delete it (and the run checkpoints beside it) to start over") from None
        if blob.get("key") != [prep.task.name, mode, eta, len(prep.train.ids), len(prep.dev.ids)]:
            raise PrivnluError(f"{path} holds another privatization; delete it or use another --out")
        return blob["train"], blob["dev"]
    train_x, dev_x = privatize(prep, mode, eta, rng)
    write_secret(path, {"key": [prep.task.name, mode, eta, len(prep.train.ids), len(prep.dev.ids)],
                        "train": train_x, "dev": dev_x})
    return train_x, dev_x


def model_outputs(task: TaskSpec) -> int:
    return 1 if task.is_regression else len(task.label_names)


# -- the paper's fine-tuning settings (Qu et al. 2021, section 6.1) -------------------------------------------

#: the paper's learning rates: BERT 2e-5 on SST, 4e-5 on QQP (MRPC stands in for QQP here); BiLSTM 1e-3 on both
PAPER_LR = {"sst2": 2e-5, "qqp": 4e-5, "mrpc": 4e-5}
PAPER_LSTM_LR = 1e-3
#: section 6.1: max length 128, batch 32, 3 epochs, 10% warm-up, for both encoders (equal budgets)
PAPER_FINETUNE = {"max_length": 128, "batch_size": 32, "epochs": 3, "warmup_ratio": 0.1}


def paper_lr(task: str) -> float:
    """The transformer learning rate the paper used for this task (2e-5 where it names none: its SST value)."""
    return PAPER_LR.get(task, PAPER_LR["sst2"])


def budget(train_size: int, batch_size: int, epochs: int) -> dict:
    """The training budget of one run: optimizer steps and examples seen (equal for both encoders in the recipe)."""
    steps = math.ceil(train_size / batch_size) * epochs
    return {"optimizer_steps": steps, "examples_seen": train_size * epochs}


# -- the grid of ``privnlu dchi finetune``: one results JSON and model folder per (encoder, mode, eta) -------------

def grid_configs(modes: list[str], encoders: list[str], etas: tuple[float, ...], *, epochs: int,
                 sequence_epochs: int | None = None, lstm_epochs: int | None = None, log=lambda s: None,
                 **config) -> list[FinetuneConfig]:
    """One :class:`FinetuneConfig` per (mode, eta, encoder), mode and eta outermost (the encoders of a (mode, eta)
    share one privatized copy); the BiLSTM has no sequence mode (it has no pretrained user-side encoder)."""
    out, skipped = [], False
    for name in modes:
        mode = finetune_mode(name)
        for eta in (etas if mode.private else [None]):
            for encoder in encoders:
                if mode.on_representation and encoder == "bilstm":
                    skipped = True
                    continue
                n = ((sequence_epochs if mode.on_representation else None)
                     or (lstm_epochs if encoder == "bilstm" else None) or epochs)
                out.append(FinetuneConfig(mode=mode.name, encoder=encoder, eta=eta, epochs=n, **config))
    if not out:
        raise PrivnluError("nothing to run: the chosen modes and encoders have no valid combination")
    if skipped:
        log("skipping bilstm/sequence: sequence mode needs a pretrained user-side encoder")
    return out


def run_grid(g: GridSettings, configs: list[FinetuneConfig], out: str | Path, *, force: bool = False,
             equal_budget: bool = True, log=lambda s: None) -> list[dict]:
    """Fine-tune every config not already done in ``out`` (a record with other settings is refused unless
    ``force``); each run's model folder is written before its results JSON (a JSON means the run, and its model,
    are complete). An interrupted run continues from its last epoch on the same privatized data."""
    from ..io import write_json_atomic
    from ..model_folder.export import export_dchi_model

    out = Path(out)
    todo = [(c, out / _file_name(g.task, g.tag, c)) for c in configs]
    todo = [(c, f) for c, f in todo if not _finished(f, _settings(g, c), force=force, log=log)]
    if not todo:
        log(f"all {len(configs)} runs already have results in {out}")
        return []
    prep = prepare(g.task, model=g.model, max_length=g.max_length, train_limit=g.train_limit, dev_limit=g.dev_limit,
                   data_dir=g.data_dir, sequence_features=any(finetune_mode(c.mode).on_representation for c, _ in todo), device=g.device)
    rng = SecretGenerator(configs[0].seed, warn=False)
    shared: dict[tuple[str, float | None], Payloads] = {}  # one privatized copy per (mode, eta) for all encoders
    records = []
    for i, (config, path) in enumerate(todo):
        key = (config.mode, config.eta)
        payload_file = out / f".payload_{g.task}{'_' + g.tag if g.tag else ''}_{config.mode}_eta{config.eta}.pt"
        if key not in shared:
            shared = {key: load_or_privatize(prep, config.mode, config.eta, rng, payload_file)}
        ckpt_file = path.with_name(f".{path.stem}.ckpt.pt")  # the pair .<stem>.ckpt.safetensors / .json
        res = finetune(prep, config, payloads=shared[key], log=log, checkpoint=ckpt_file)
        rec = res.record
        rec.update(tag=g.tag, settings=_settings(g, config), equal_budget=equal_budget,
                   budget=budget(rec["train_size"], config.batch_size, config.epochs),
                   scheme=for_finetune_mode(config.mode).name)
        export_dchi_model(out / path.stem, record=rec, model=res.model, encoder=prep.encoder,
                          label_names=prep.task.label_names, pair=prep.pair, base_model=g.model)
        rec["model_dir"] = path.stem
        write_json_atomic(path, shareable(rec, out))  # no local path in a file one may share
        ckpt.remove(ckpt_file)
        if all((c.mode, c.eta) != key for c, _ in todo[i + 1:]):
            payload_file.unlink(missing_ok=True)
        log(f"{path.name}: dev score {rec['score']:.2f} ({rec['seconds']:.0f} s)")
        records.append(rec)
    return records


def _settings(g: GridSettings, c: FinetuneConfig) -> dict:
    """Everything that changes one fine-tuning run's result (recorded in its file, compared on a rerun)."""
    return {"task": g.task, "model": g.model, "data_dir": g.data_dir, "train_limit": g.train_limit,
            "dev_limit": g.dev_limit, "max_length": g.max_length, **asdict(c)}


def _finished(path: Path, settings: dict, *, force: bool, log) -> bool:
    """True if ``path`` holds this run's result; refuses (one line) a result computed with other settings."""
    from ..io import json_text, read_json

    if force or not path.exists():
        return False
    try:
        rec = read_json(path)
        old, _ = rec.get("settings"), rec["score"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        log(f"{path} is not a readable result; recomputing it")
        return False
    if old is None:
        raise PrivnluError(f"{path} records no settings (an older privnlu wrote it): move it away, or --force to "
                           "recompute")
    new = json.loads(json_text(shareable(settings, path.parent)))  # as the writer stores paths
    diff = [f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if diff:
        raise PrivnluError(f"{path} holds a run computed with other settings ({'; '.join(diff[:4])}): use another "
                           "--out, or --force to recompute it")
    return True


def _file_name(task: str, tag: str, c: FinetuneConfig) -> str:
    eta = "" if c.eta is None else f"_eta{c.eta:g}"
    return f"finetune_{task}{'_' + tag if tag else ''}_{c.encoder}_{c.mode}{eta}.json"
