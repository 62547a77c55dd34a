"""The encoding space of a shared file: an attack on a payload re-encodes its candidate and auxiliary sentences
exactly as the owner encoded the release, or it measures the wrong thing.

The payload's public metadata states the encoder (name and fingerprint), the pooling, the maximum length and the
bf16 setting the owner used (``privnlu encode``). :func:`payload_space` returns those settings for the attacker;
a setting the attacker states that conflicts with the file (``--pooling cls`` on a mean-pooled release, a
``--model`` folder with other weights) is refused with one line before any work, never silently re-encoded.
A file written before a setting was recorded keeps the attacker's value for it (the defaults then were the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PrivnluError
from ..models.encoder import model_fingerprint, resolve_model

#: the pooling value that means "not stated": the payload's own
AUTO = "auto"


def payload_space(meta: dict, *, path: str | Path, model: str | None, pooling: str | None, max_length: int,
                  bf16: bool | str) -> dict[str, Any]:
    """``model``, ``pooling``, ``max_length`` and ``bf16`` for attacking the payload at ``path`` (its metadata
    ``meta``), from the file where it states them; PrivnluError on a conflict with what the attacker gave."""
    stated = meta.get("pooling")
    if stated is not None and pooling not in (None, AUTO, stated):
        raise PrivnluError(f"--pooling {pooling} conflicts with --payload {path}, which was encoded with {stated} "
                           "pooling: leave --pooling out (the attack works in the payload's own space)")
    fingerprint = meta.get("encoder_fingerprint")
    if fingerprint:
        folder = resolve_model(model)
        if not folder.is_dir() or model_fingerprint(folder) != fingerprint:
            which = f"--model {model}" if model else "the packaged default model"
            raise PrivnluError(f"{which} is not the encoder of --payload {path} (it was encoded with "
                               f"'{meta.get('encoder', '?')}', fingerprint {fingerprint[:12]}): pass --model with "
                               "that model's folder")
    return {"model": model, "pooling": stated or pooling or AUTO,
            "max_length": int(meta.get("max_length", max_length)), "bf16": meta.get("bf16", bf16)}
