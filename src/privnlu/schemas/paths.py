"""No local path in anything a user may share: the fields of a record that name a file or folder are written
portably (:func:`shareable`).

* a path that shares a folder below the file-system root with the run's folder is written relative to the run
  folder (``"model"``, ``"../models/minilm"``): it names no folder above the one they share, so neither the user's
  home nor the machine's layout, and it still leads to the file when the whole tree is moved or copied;
* any other absolute path becomes a reference: its last component and, where it has one, a short content
  fingerprint, ``{"name": "minilm", "sha256": "52fbc9f69d4d3847"}``. A model folder's fingerprint is the one
  ``privnlu predict`` checks (sha256 over its config, weight and vocabulary files, first 16 hex digits), a file's is
  the sha256 of its bytes; a data or cache folder is named only.

A relative path the user gave (relative to the working folder) is rewritten the same way where it exists; names
that are not paths (``"wiki"``, a hub id ``org/name``) are kept as they are. Readers that open the path again
(``predict``, ``attack gradient --truth``) resolve it against the run folder (:func:`recorded_path`), or take it
from the command line where the record holds a reference (:func:`local_settings`). Settings compared on a rerun
(``sweep``, ``dchi finetune``) are compared in this portable form, so that a rerun recognises its own records.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

#: record fields that may hold a local path
PATH_FIELDS = frozenset({"model", "data_dir", "cache_dir", "model_dir", "payload", "wire", "out", "run_dir",
                         "train_file", "dev_file", "corpus", "public", "key", "key_out", "ledger", "path", "file"})
#: the files of a model folder its fingerprint covers (as :func:`privnlu.models.encoder.model_fingerprint`)
MODEL_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "vocab.txt", "tokenizer.json")
#: hex digits of a fingerprint kept in a record
SHORT = 16


def is_local_path(value: Any) -> bool:
    """An absolute path, or one starting with ``~``."""
    return isinstance(value, str) and bool(value) and (value.startswith("~") or os.path.isabs(value))


def _is_path(value: Any) -> bool:
    """A local path as the user gave it: absolute, or relative to the working folder (with a ``/``: a bare name
    such as ``wiki`` is a name) and present there."""
    if is_local_path(value):
        return True
    return (isinstance(value, str) and "/" in value.strip("/") and "\n" not in value and len(value) < 4096
            and os.path.exists(value))


def _stamp(p: Path) -> tuple:
    files = [p / n for n in MODEL_FILES] if p.is_dir() else [p]
    return tuple((f.name, s.st_size, s.st_mtime_ns) for f in files if f.is_file() and (s := f.stat()))


@functools.lru_cache(maxsize=64)
def _fingerprint(path: str, stamp: tuple) -> str | None:
    p = Path(path)
    h = hashlib.sha256()
    if p.is_file():
        files = [(None, p)]
    elif (p / "config.json").is_file():
        files = [(n, p / n) for n in MODEL_FILES if (p / n).is_file()]
    else:
        return None
    for name, f in files:
        if name is not None:
            h.update(name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:SHORT]


def content_fingerprint(path: str | Path) -> str | None:
    """A file's sha256, a model folder's fingerprint (16 hex digits); None for another folder or a missing path."""
    p = Path(path).expanduser()
    try:
        return _fingerprint(str(p.resolve()), _stamp(p))
    except OSError:
        return None


def path_ref(value: str | Path, base: str | Path | None = None) -> str | dict:
    """``value`` relative to ``base`` where the two share a folder below the file-system root, else
    ``{"name": ..., "sha256": ...}`` (see the module docstring)."""
    p = Path(value).expanduser().resolve()
    if base is not None:
        b = Path(base).expanduser().resolve()
        if len(Path(os.path.commonpath([p, b])).parts) > 1:
            return Path(os.path.relpath(p, b)).as_posix()
    ref: dict = {"name": p.name or "/"}
    fp = content_fingerprint(p)
    if fp is not None:
        ref["sha256"] = fp
    return ref


def shareable(obj: Any, base: str | Path | None = None) -> Any:
    """A copy of ``obj`` (a record or a block of one) with every local path of a :data:`PATH_FIELDS` field
    written portably (see the module docstring)."""
    if isinstance(obj, dict):
        return {k: path_ref(v, base) if k in PATH_FIELDS and _is_path(v) else shareable(v, base)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [shareable(v, base) for v in obj]
    return obj


def display_name(value: Any) -> str:
    """How a report shows a recorded path: a reference's name, a local path's last component, else the value."""
    if isinstance(value, dict):
        return str(value.get("name", ""))
    if is_local_path(value):
        return Path(value).name
    return "" if value is None else str(value)


def recorded_path(value: Any, base: str | Path) -> Any:
    """A path a record holds, to open again: a relative path resolved against the record's folder ``base`` where
    it exists there; anything else (a reference, a name, None) as it is."""
    if isinstance(value, str) and value and not os.path.isabs(value):
        p = Path(base) / value
        if p.exists():
            return str(p.resolve())
    return value


def local_settings(settings: dict, given: dict, *, what: str, base: str | Path | None = None) -> dict:
    """A recorded settings block made usable again on this machine: a relative path resolved against the record's
    folder ``base`` (:func:`recorded_path`), a reference is replaced by the path ``given``
    for its field (checked against the recorded fingerprint), a referenced model with none given is refused (one
    line, naming the folder to pass), another referenced folder falls back to the default location (``""``)."""
    from ..errors import PrivnluError

    out = dict(settings)
    for k, v in settings.items():
        if k not in PATH_FIELDS:
            continue
        if not (isinstance(v, dict) and "name" in v):
            out[k] = recorded_path(v, base) if base is not None else v
            continue
        path = given.get(k)
        if path:
            fp = content_fingerprint(path)
            if v.get("sha256") and fp != v["sha256"]:
                raise PrivnluError(f"{what}: {path} is not the {k} the run used ('{v['name']}', fingerprint "
                                   f"{v['sha256']}; this one has {fp})")
            out[k] = str(path)
        elif k == "model":
            raise PrivnluError(f"{what}: the run used a local model folder named '{v['name']}' (fingerprint "
                               f"{v.get('sha256')}); pass it with --model FOLDER")
        else:
            out[k] = ""
    return out
