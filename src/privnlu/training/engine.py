"""The training and release engine: data -> representations -> privacy scheme -> head -> metrics.

``train``, ``encode``, ``sweep``, ``audit`` and the paper recipes all go through :func:`prepare` (load data, encode
or read the feature cache) and :func:`train_run` (one run under one scheme), so none of them repeats this logic.
The scheme comes from the registry (:mod:`privnlu.schemes`) and says what happens: a per-batch encoding scheme
encodes every training batch with fresh one-time keys (``scheme.hider``); a scheme released once privatizes the
data before training (``scheme.release_data``); a scheme with a private optimizer (``scheme.private_training``,
DP-SGD) trains the model with :mod:`.dp_sgd`.
"""

from __future__ import annotations

import contextlib
import copy
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from ..choices import MODES
from ..data import TextDataset, get_task, load_public_corpus
from ..data.tasks import TaskSpec
from ..errors import PrivnluError, require_at_least_one, require_choice
from ..io import write_json_atomic
from ..mechanisms.dp import DPSettings
from ..mechanisms.texthide import MaskPool, TextHide
from ..models import FeatureCache, MLPHead, config_summary, load_encoder
from ..models.encoder import SentenceEncoder, public_model_name, resolve_pooling
from ..models.features import extract_features
from ..models.heads import AbsInput
from ..models.precision import autocast, resolve_bf16
from ..params import m_label
from ..rng import SecretGenerator
from ..schemas import shareable
from ..schemes import NoPrivacy, Scheme, create
from ..version import __version__
from .batching import pad
from .losses import targets_from_labels
from .run_folder import MODEL_DIR, RUN_FILES, check_run_dir  # noqa: F401 (re-exported: the engine's names)
from .trainer import TrainConfig, evaluate, fit


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines one training run (saved in its results JSON)."""

    task: str
    model: str | None = None
    pooling: str = "auto"  # resolved here to the model's own (models.encoder.default_pooling)
    scheme: Scheme = field(default_factory=NoPrivacy)
    public: str = "wiki"
    public_size: int = 20000
    mode: str = "frozen"
    max_length: int = 128
    train_limit: int | None = None
    dev_limit: int | None = None
    data_dir: str | None = None
    cache_dir: str | None = None
    bf16: bool | str = "auto"  # auto: where the device runs bf16 natively; resolved to a bool here
    device: str = "cpu"
    encode_batch_size: int = 64
    encoder_lr: float = 2e-5
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        require_choice("mode", self.mode, MODES)
        if not isinstance(self.scheme, Scheme):
            raise PrivnluError(f"a run's scheme is a privnlu.schemes scheme, not {self.scheme!r}")
        object.__setattr__(self, "bf16", resolve_bf16(self.bf16, self.device))
        object.__setattr__(self, "pooling", resolve_pooling(self.model, self.pooling))
        self.scheme.check_run(mode=self.mode, batch_size=self.train.batch_size)  # validate before any work
        require_at_least_one(self, "max_length", "public_size", "encode_batch_size")
        if not self.encoder_lr > 0:
            raise PrivnluError(f"the encoder learning rate must be positive, not {self.encoder_lr}")

    @property
    def inter(self) -> bool:
        """True if the scheme mixes in a public corpus (its representations are then prepared too)."""
        return self.scheme.mixes_public

    @property
    def variant(self) -> str:
        return self.scheme.variant

    @property
    def label(self) -> str:
        return f"{self.task}-{self.scheme.label}"

    def to_json(self) -> dict:
        """The spec as its results record states it: the scheme's name, and its m, k, inter and DP settings under
        the fields every record has used."""
        d = asdict(replace(self, scheme=NoPrivacy()))
        del d["scheme"]
        s = self.scheme
        dp = s.record_dp()  # DP instance encoding's DPSettings; DP-SGD has its parameters
        eta = {"eta": s.params()["eta"]} if s.params().get("eta") is not None else {}
        return {"task": d.pop("task"), "model": d.pop("model"), "pooling": d.pop("pooling"), "scheme": s.name,
                **s.record_fields(), "inter": self.inter, **eta, **d, "dp": dp}


@dataclass
class Prepared:
    """Data and representations for a task, ready for any number of (m, k) runs."""

    task: TaskSpec
    encoder: SentenceEncoder
    train: TextDataset
    evals: dict[str, TextDataset]
    train_x: torch.Tensor | None
    eval_x: dict[str, torch.Tensor]
    public_x: torch.Tensor | None
    public_texts: list[str] | None
    released: object | None = None  # a once-released scheme's train release (schemes.dchi.FeatureRelease)


def load_splits(spec: RunSpec) -> tuple[TaskSpec, TextDataset, dict[str, TextDataset]]:
    task = get_task(spec.task)
    train = task.load("train", spec.data_dir).head(spec.train_limit)
    evals = {s: task.load(s, spec.data_dir).head(spec.dev_limit) for s in task.eval_splits}
    return task, train, evals


def prepare(spec: RunSpec, *, progress: bool = True, encoder: SentenceEncoder | None = None,
            refresh_cache: bool = False) -> Prepared:
    """Load the task and its representations (from the feature cache in frozen mode); a scheme that releases once
    (d_chi) privatizes every split here, as the provider's encoder sees it."""
    task, train, evals = load_splits(spec)
    enc = encoder or load_encoder(spec.model, pooling=spec.pooling, device=spec.device)
    cache = FeatureCache(spec.cache_dir, refresh=refresh_cache)
    kw = dict(max_length=spec.max_length, batch_size=spec.encode_batch_size, bf16=spec.bf16, progress=progress)
    public_ds = load_public_corpus(spec.public, spec.public_size) if spec.inter else None
    if spec.mode == "joint":
        return Prepared(task, enc, train, evals, None, {}, None, public_ds.texts_a if public_ds else None)
    train_x = cache.get(enc, train, **kw).features
    eval_x = {s: cache.get(enc, ds, **kw).features for s, ds in evals.items()}
    public_x = cache.get(enc, public_ds, **kw).features if public_ds is not None else None
    prep = Prepared(task, enc, train, evals, train_x, eval_x, public_x, None)
    return release_once(spec, prep, progress=progress)


def release_once(spec: RunSpec, prep: Prepared, *, rng: SecretGenerator | None = None, progress: bool = True,
                 keep: torch.Tensor | None = None) -> Prepared:
    """``prep`` with every split replaced by its release under the spec's scheme where the scheme releases the data
    once (d_chi: privatized once on the user's side, fresh noise, as the provider's frozen encoder represents it),
    else ``prep`` itself; ``keep``: train rows whose release the caller keeps (the audit's attacked sentences), in
    ``prep.released``."""
    if prep.train_x is None:
        return prep
    splits = {"train": (prep.train, prep.train_x), **{s: (ds, prep.eval_x[s]) for s, ds in prep.evals.items()}}
    out = spec.scheme.release_data(prep.encoder, splits, rng or SecretGenerator(spec.train.seed, warn=False),
                                   keep=keep, max_length=spec.max_length, batch_size=spec.encode_batch_size,
                                   progress=progress)
    if out is None:
        return prep
    train = out.pop("train")
    return replace(prep, train_x=train.features, eval_x={s: r.features for s, r in out.items()}, released=train)


def split_release(prep: Prepared, split: str) -> tuple[TextDataset, torch.Tensor, torch.Tensor]:
    """A split's dataset, cached representations and label targets (one-hot, or scores), for a release."""
    if split == "train":
        ds, x = prep.train, prep.train_x
    elif split in prep.evals:
        ds, x = prep.evals[split], prep.eval_x[split]
    else:
        raise PrivnluError(f"unknown split '{split}' for {prep.task.name}; use train or {', '.join(prep.evals)}")
    assert x is not None, "releases use cached features (frozen mode)"
    n_out = 1 if prep.task.is_regression else len(prep.task.label_names)
    return ds, x, targets_from_labels(_labels(ds), n_out, regression=prep.task.is_regression)


def make_hider(spec: RunSpec, dim: int, rng: SecretGenerator, public_x: torch.Tensor | None,
               pool: MaskPool | None = None) -> TextHide | None:
    """The spec's per-batch encoder of private representations (TextHide, DP TextHide calibrated for the whole run),
    or None where training sees the representations as prepared."""
    return spec.scheme.hider(dim=dim, rng=rng, epochs=spec.train.epochs, public=public_x, pool=pool)


def _labels(ds: TextDataset) -> torch.Tensor:
    return torch.tensor(ds.labels, dtype=torch.float32 if ds.is_regression else torch.long)


def train_run(
    spec: RunSpec,
    prep: Prepared,
    *,
    out: Path | None = None,
    run_dir: Path | None = None,
    resume: bool = False,
    progress: bool = True,
    group: str = "train",
    keep: dict | None = None,
) -> dict:
    """Train one run and return (and, with ``out``, atomically write) its results record.

    With ``run_dir``, a per-epoch checkpoint and the mask pool (key material,
    mode 0600) are kept there so that ``resume=True`` continues an interrupted run,
    and the trained model is written to ``run_dir/model`` in the Hugging Face layout
    with a model card (:mod:`privnlu.models.saving`; no key material), before ``out``.
    With ``out`` but no ``run_dir`` (the recipes), they go to a hidden folder beside
    ``out`` that the next call resumes from and that is deleted once ``out`` is written:
    an interrupted recipe loses at most the epoch it was in.

    A scheme that releases only the model (DP-SGD) trains with :mod:`.dp_sgd` instead: its ``dp`` block is the
    :class:`~.dp_sgd.DPSGDResult`'s JSON, and it keeps no checkpoint (an interrupted run restarts from scratch, as
    the accountant's state would have to be restored). With ``keep`` (a dict), the trained modules are put there:
    ``head`` (eval mode), ``encoder`` (the fine-tuned copy in joint mode) and ``query``, a function from clean
    sentence representations to the head's logits through the run's query path (a pool mask first where the
    run's evaluation applies one).
    """
    scratch = out is not None and run_dir is None
    if scratch:
        assert out is not None
        run_dir, resume = out.parent / f".{out.stem}.ckpt", True
    t0 = time.time()
    task, cfg = prep.task, spec.train
    rng = SecretGenerator(cfg.seed, warn=False)
    if cfg.seed is not None:
        torch.manual_seed(cfg.seed)  # model initialisation only; secrets use `rng`
    dim = prep.encoder.dim
    num_out = 1 if task.is_regression else len(task.label_names)
    head: torch.nn.Module = MLPHead(dim, num_out, cfg.hidden, cfg.dropout)
    if cfg.abs_input:
        head = AbsInput(head)
    head = head.to(spec.device)
    pool = None
    key_path = run_dir / "key.pt" if run_dir is not None else None
    if key_path is not None and resume and key_path.exists():
        pool = MaskPool.load(key_path)
    hider = make_hider(spec, dim, rng, prep.public_x, pool)
    if hider is not None and key_path is not None and hider.pool.masks is not None and pool is None:
        hider.pool.save(key_path)
    targets = targets_from_labels(_labels(prep.train), num_out, regression=task.is_regression)
    eval_labels = {s: _labels(ds) for s, ds in prep.evals.items()}
    common = dict(task=task, head=head, targets=targets, config=cfg, hider=hider, progress=progress, resume=resume,
                  checkpoint=run_dir / "checkpoint.pt" if run_dir is not None else None)

    encoder = prep.encoder
    # the calibration of the noise (DP instance encoding), else the scheme's own DP settings (a scheme released once)
    dp = cal.to_json() if (cal := getattr(hider, "calibration", None)) is not None else spec.scheme.record_dp()
    if spec.scheme.private_training() is not None:  # the model is trained privately (DP-SGD)
        head, encoder, result = _fit_dp_sgd(spec, prep, head, eval_labels, progress)
        history, dp, earlier = result.history, result.to_json(), 0.0
    elif spec.mode == "frozen":
        assert prep.train_x is not None
        train_x = prep.train_x.to(spec.device)
        state = fit(represent=lambda idx: train_x[idx.to(train_x.device)],
                    eval_sets=lambda: {s: (prep.eval_x[s], eval_labels[s]) for s in prep.evals}, **common)
        history, earlier = state.history, state.earlier_seconds
    else:
        # every joint run starts from the pretrained weights: ``prep.encoder`` is shared by the runs of a recipe
        # (baseline, intra, inter, ...) and must not carry one run's fine-tuning into the next
        encoder = copy.deepcopy(prep.encoder)
        state = _fit_joint(spec, prep, encoder, eval_labels, hider, rng, common)
        history, earlier = state.history, state.earlier_seconds
    if keep is not None:
        keep.update(head=head.eval(), encoder=encoder, query=_query(head, hider, cfg.eval_mask))
    final = history[-1]["eval"]
    first = task.eval_splits[0]
    from ..data.metrics import majority as majority_score  # the floor a model card compares the score with

    record = {
        "kind": "train",
        "group": group,
        "privnlu": __version__,
        "label": spec.label,
        "task": task.name,
        "variant": spec.variant,
        "scheme": spec.scheme.name,
        **spec.scheme.record_fields(),
        "inter": spec.inter,
        "mode": spec.mode,
        "metric": task.metric,
        "eval": final,
        "score": final[first]["score"],
        "best_score": max(h["eval"][first]["score"] for h in history),
        "n_train": len(prep.train),
        "n_eval": {s: len(ds) for s, ds in prep.evals.items()},
        "majority": majority_score(task.metric, prep.train.labels, prep.evals[first].labels,
                                   regression=task.is_regression),
        "encoder": {**config_summary(prep.encoder), "model": public_model_name(prep.encoder)},
        "spec": spec.to_json(),
        "experiment_seed": cfg.seed,
        "dp": dp,
        "history": history,
        "seconds": round(time.time() - t0 + earlier, 2),  # with the epochs of earlier calls a resumed run kept
    }
    if run_dir is not None and not scratch:
        from ..model_folder.export import export_run_model

        export_run_model(run_dir / MODEL_DIR, record=record, head=head, encoder=encoder,
                         label_names=task.label_names, pair=prep.train.is_pair,
                         key_masks=hider.pool.masks if hider is not None else None)
    if out is not None:
        write_json_atomic(out, shareable(record, Path(out).parent))  # no local path in a file one may share
    if scratch and run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)
    return record


def train(spec: RunSpec, run_dir: str | Path, *, resume: bool = False, overwrite: bool = False,
          refresh_cache: bool = False, progress: bool = True, log=lambda msg: None,
          ledger: str | Path | None = None) -> dict:
    """One training run into ``run_dir`` (``privnlu train``): its results record, checkpoint, key (0600) and model
    folder with its card; returns the record. Refuses a folder that holds a run unless ``resume``/``overwrite``.
    With ``ledger``, the trained model is a release of the training set: checked against the owner's budget before
    any work (DP-SGD: the noise its settings calibrate to), recorded with the accounted guarantee once written."""
    run_dir = Path(run_dir)
    check_run_dir(run_dir, resume=resume, overwrite=overwrite)
    pending = _ledger_check(spec, run_dir, ledger) if ledger is not None else None  # counts against the budget
    if spec.mode == "joint" and (warning := spec.scheme.joint_warning()) is not None:
        log(warning)
    with pending or contextlib.nullcontext():  # a run that fails before its model is written drops the record
        prep = prepare(spec, progress=progress, refresh_cache=refresh_cache)
        rec = train_run(spec, prep, out=run_dir / "result.json", run_dir=run_dir, resume=resume, progress=progress)
    if pending is not None:
        from ..schemes.ledger import release_of

        pending.commit(release_of(spec.scheme, "train", f"{spec.task}/train", str(run_dir / MODEL_DIR),
                                  calibration=rec["dp"]))
        log(f"recorded the trained model in the ledger {ledger}")
    return rec


def _ledger_check(spec: RunSpec, run_dir: Path, ledger: str | Path):
    """Refuse, before any work, a model release the owner's budget does not allow; else record it as pending
    (:class:`~privnlu.schemes.ledger.Pending`, committed once the model is written)."""
    from ..schemes.ledger import Ledger, dataset_hashes, release_of

    _, train_ds, _ = load_splits(spec)
    book, hashes = Ledger.open(ledger), dataset_hashes(train_ds)
    planned = None
    if (refusal := spec.scheme.ledger_train_refusal()) is not None:
        raise PrivnluError(refusal)
    if (private := spec.scheme.private_training()) is not None:  # the noise DP-SGD will use, as training calibrates it
        from .dp_sgd import plan_noise

        planned = {"epsilon": private["epsilon"], **plan_noise(len(train_ds), dp_sgd_config(spec))}
    return book.begin(release_of(spec.scheme, "train", f"{spec.task}/train", str(run_dir / MODEL_DIR),
                                 calibration=planned), hashes)


def _query(head: torch.nn.Module, hider: TextHide | None, eval_mask: str):
    """The run's query path on clean sentence representations: a pool mask where evaluation applies one
    (:func:`~.trainer.fit`), then the head; returns the logits."""
    device = next(head.parameters()).device

    @torch.no_grad()
    def query(x: torch.Tensor) -> torch.Tensor:
        x = x.float()
        if hider is not None and eval_mask == "pool":
            x = hider.mask_only(x)
        return head(x.to(device)).float()

    return query


def _tokenize_train(spec: RunSpec, prep: Prepared, enc: SentenceEncoder):
    """The training texts' token ids (and token types, or None) and the pad id, for joint fine-tuning."""
    tok = enc.tokenizer(prep.train.texts_a, prep.train.texts_b, truncation=True, max_length=spec.max_length)
    ids = [torch.tensor(x) for x in tok["input_ids"]]
    types = [torch.tensor(x) for x in tok["token_type_ids"]] if "token_type_ids" in tok else None
    return ids, types, enc.tokenizer.pad_token_id or 0


def _eval_features(spec: RunSpec, prep: Prepared, enc: SentenceEncoder) -> dict[str, torch.Tensor]:
    """Every eval split's representations through ``enc`` as it is now."""
    kw = dict(max_length=spec.max_length, batch_size=spec.encode_batch_size, bf16=spec.bf16, progress=False)
    return {s: extract_features(enc, ds.texts_a, ds.texts_b, **kw) for s, ds in prep.evals.items()}


def dp_sgd_config(spec: RunSpec):
    """The :class:`~.dp_sgd.DPSGDConfig` of a DP-SGD run: the scheme's privacy parameters, the run's epochs, learning
    rate, batch size and seed."""
    from .dp_sgd import DPSGDConfig

    private, cfg = spec.scheme.private_training(), spec.train
    if private is None:
        raise PrivnluError(f"{spec.scheme.name} has no private optimizer")
    return DPSGDConfig(**private, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, seed=cfg.seed)


def _fit_dp_sgd(spec: RunSpec, prep: Prepared, head: torch.nn.Module, eval_labels: dict, progress: bool):
    """DP-SGD on the head (frozen) or on a copy of the encoder and the head (joint), the scheme's privacy
    parameters with the run's epochs, learning rate, batch size and seed; ``(head, encoder, DPSGDResult)``."""
    from .dp_sgd import finetune_joint, train_head

    task, config = prep.task, dp_sgd_config(spec)
    labels, num_out = _labels(prep.train), 1 if task.is_regression else len(task.label_names)
    if spec.mode == "frozen":
        assert prep.train_x is not None
        evals = {name: (prep.eval_x[name], eval_labels[name]) for name in prep.evals}
        result = train_head(prep.train_x.to(spec.device), labels, num_outputs=num_out, config=config, head=head,
                            eval_fn=lambda h: evaluate(h, evals, task), progress=progress)
        return result.model, prep.encoder, result
    encoder = copy.deepcopy(prep.encoder)  # every run starts from the pretrained weights
    ids, types, pad_id = _tokenize_train(spec, prep, encoder)

    def eval_fn(model) -> dict:
        x = _eval_features(spec, prep, model.encoder)
        return evaluate(model.head, {name: (x[name], eval_labels[name]) for name in prep.evals}, task)

    result = finetune_joint(encoder, head, ids, types, labels, pad_id=pad_id, config=config, eval_fn=eval_fn,
                            progress=progress, encoder_lr=spec.encoder_lr)
    return result.model.head, result.model.encoder, result


def _fit_joint(spec: RunSpec, prep: Prepared, enc: SentenceEncoder, eval_labels, hider, rng: SecretGenerator,
               common: dict):
    """Joint fine-tuning of ``enc`` (a copy of ``prep.encoder``): the encoder runs inside the training step."""
    ids, types, pad_id = _tokenize_train(spec, prep, enc)

    def represent(idx: torch.Tensor) -> torch.Tensor:
        """The current encoder on the batch, padded to its longest example."""
        input_ids, mask = pad([ids[i] for i in idx.tolist()], pad_id)
        tt = pad([types[i] for i in idx.tolist()])[0].to(spec.device) if types is not None else None
        return enc(input_ids.to(spec.device), mask.to(spec.device), tt)

    def eval_sets():
        x = _eval_features(spec, prep, enc)
        return {s: (x[s], eval_labels[s]) for s in prep.evals}

    texts = prep.public_texts or []

    @torch.no_grad()
    def encode_public(b: int) -> torch.Tensor:
        """A fresh random public mini-batch through the current encoder (TextHide-inter)."""
        idx = rng.randint(len(texts), b).tolist()
        t = enc.tokenize([texts[i] for i in idx], max_length=spec.max_length)
        t = {k: v.to(spec.device) for k, v in t.items()}
        with autocast(spec.device, spec.bf16):
            return enc(t["input_ids"], t["attention_mask"], t.get("token_type_ids")).float()

    return fit(represent=represent, eval_sets=eval_sets, public=encode_public if spec.inter else None, extra_params=list(enc.parameters()),
               extra_modules={"encoder": enc}, extra_lr=spec.encoder_lr, lengths=[len(x) for x in ids], bf16=spec.bf16,
               **common)


def with_scheme(spec: RunSpec, *, m: float, k: int, inter: bool = False, dp: DPSettings | None = None) -> RunSpec:
    """The same run with another (m, k) point (and DP settings): TextHide intra or inter, or DP instance encoding;
    (0, 1) without ``inter`` or DP is the baseline."""
    if m == 0 and k == 1 and not inter and dp is None:
        return replace(spec, scheme=NoPrivacy())
    if dp is None:
        return replace(spec, scheme=create("texthide-inter" if inter else "texthide", m=m, k=k))
    return replace(spec, scheme=create("dp-ie", m=m, k=k, inter=inter, mechanism=dp.mechanism, epsilon=dp.epsilon,
                                       delta=dp.delta, clip=dp.clip, calibration=dp.calibration,
                                       clean_queries=not dp.noisy_queries))


def grid_label(m: float, k: int) -> str:
    return f"m{m_label(m)}-k{k}"
