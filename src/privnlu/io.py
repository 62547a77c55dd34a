"""Atomic, permission-aware file output.

Outputs are written to a temporary file in the destination folder and renamed
into place, so an interrupted run never leaves a half-written file and never
clobbers an earlier result. Key material is written with mode 0600 from the
moment the file exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

SECRET_MODE = 0o600


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    The temporary file is removed if the body raises (including on Ctrl-C).
    ``mode`` (e.g. :data:`SECRET_MODE`) is applied before any byte is written.
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        if mode is not None:
            os.chmod(tmp_path, mode)
        yield tmp_path
        if mode is not None:
            os.chmod(tmp_path, mode)
        os.replace(tmp_path, dest)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], writer: Callable[[Path], None], *, mode: int | None = None) -> Path:
    """Call ``writer(tmp_path)`` and move the result onto ``path`` atomically."""
    with atomic_path(path, mode=mode) as tmp:
        writer(tmp)
    return Path(path)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> Path:
    return write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"), mode=mode)


def write_json_atomic(path: str | os.PathLike[str], obj: Any, *, mode: int | None = None) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n", mode=mode)


def torch_save_atomic(path: str | os.PathLike[str], obj: Any, *, mode: int | None = None) -> Path:
    return write_atomic(path, lambda p: torch.save(obj, p), mode=mode)


def write_secret(path: str | os.PathLike[str], obj: Any) -> Path:
    """Save key material with ``torch.save``, readable by the owner only (0600)."""
    return torch_save_atomic(path, obj, mode=SECRET_MODE)


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, float) and obj == float("inf"):
        return "inf"
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
