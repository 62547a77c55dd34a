"""Atomic, permission-aware file output.

Outputs are written to a temporary file in the destination folder and renamed
into place, so an interrupted run never leaves a half-written file and never
clobbers an earlier result. Key material is written with mode 0600 from the
moment the file exists. :func:`atomic_paths` commits several files together (a
release and its key: neither exists without the other).

Every result JSON (a dict with a ``"kind"``) written through
:func:`write_json_atomic` is stamped with :func:`provenance`: the privnlu
version, the git commit of a source checkout, and the versions of torch,
transformers, flwr and dp-accounting. Non-finite floats are written as the
strings ``"inf"``, ``"-inf"`` and ``"nan"``, so the file stays valid JSON.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

from .errors import PrivnluError

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


@contextlib.contextmanager
def atomic_paths(*targets: tuple[str | os.PathLike[str], int | None]) -> Iterator[list[Path]]:
    """Temporary paths for several ``(path, mode)`` targets, renamed into place together when the body succeeds.

    Nothing is renamed unless every file was written; if a rename fails, the files already renamed are removed
    again, so a release never exists without its key, nor a key without its release.
    """
    with contextlib.ExitStack() as stack:
        tmps: list[Path] = []
        for path, mode in targets:
            dest = Path(path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
            os.close(fd)
            tmp_path = Path(tmp)
            stack.callback(tmp_path.unlink, missing_ok=True)
            if mode is not None:
                os.chmod(tmp_path, mode)
            tmps.append(tmp_path)
        yield tmps
        done: list[Path] = []
        try:
            for tmp_path, (path, _) in zip(tmps, targets):
                os.replace(tmp_path, path)
                done.append(Path(path))
        except BaseException:
            for d in done:
                d.unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; on success it replaces ``path`` (a folder, if any).

    The new folder is renamed into place; an existing folder is first renamed aside and removed afterwards, so
    ``path`` holds either the old folder or the complete new one (between the two renames, for an instant,
    neither: a crash there leaves the old one as ``.<name>.*.old``). The temporary folder is removed if the body
    raises (Ctrl-C included).
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # an ordinary folder's mode, not mkdtemp's 0700
        yield tmp
        old = None
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=dest.parent))
            os.replace(dest, old / dest.name)
        os.replace(tmp, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``path`` as an exclusive ``flock`` for the block, so that two processes never run it at once: the
    second waits. The file is removed on release; a waiter that locked a file already removed opens the new one
    and waits again."""
    import fcntl

    path = Path(path)
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def umask_mode(*, executable: bool = False) -> int:
    """The mode an ordinary new file gets under the user's umask (0644, or 0755 when ``executable``, under the usual
    022; 0600 under 077): for files meant for readers, which must still follow a private umask."""
    return (0o777 if executable else 0o666) & ~_umask()


def remove_stale_temps(path: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files an earlier, killed writer of ``path`` left beside it (``.<name>.*.tmp``).

    For files with a single writer (a run's checkpoint): call it before writing. SIGTERM and Ctrl-C never leave
    them (see :func:`atomic_path`); only SIGKILL or a power cut can.
    """
    dest = Path(path)
    stale = list(dest.parent.glob(f".{dest.name}.*.tmp")) if dest.parent.is_dir() else []
    for f in stale:
        f.unlink(missing_ok=True)
    return stale


def write_atomic(path: str | os.PathLike[str], writer: Callable[[Path], None], *, mode: int | None = None) -> Path:
    """Call ``writer(tmp_path)`` and move the result onto ``path`` atomically."""
    with atomic_path(path, mode=mode) as tmp:
        writer(tmp)
    return Path(path)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> Path:
    return write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"), mode=mode)


def write_json_atomic(path: str | os.PathLike[str], obj: Any, *, mode: int | None = None) -> Path:
    """Write ``obj`` as JSON atomically; a result record (a dict with a ``"kind"``) gets a ``"provenance"`` stamp."""
    return write_text_atomic(path, json_text(obj) + "\n", mode=mode)


def json_text(obj: Any) -> str:
    """Strict JSON for ``obj`` (see the module docstring); a result record gets its ``"provenance"`` stamp."""
    if isinstance(obj, dict) and "kind" in obj and "provenance" not in obj:
        obj = {**obj, "provenance": provenance()}
    return json.dumps(_finite(obj), indent=2, sort_keys=False, default=_json_default, allow_nan=False)


#: the libraries whose versions a result records
STAMPED_PACKAGES = ("torch", "transformers", "flwr", "dp-accounting")


@functools.lru_cache(maxsize=1)
def provenance() -> dict:
    """privnlu's version, its git commit (a source checkout only) and the versions of the libraries results
    depend on (None where not installed)."""
    from importlib import metadata

    from .version import __version__

    versions: dict[str, str | None] = {}
    for name in STAMPED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"privnlu": __version__, "git_commit": _git_commit(), **versions}


#: names the source commit where the checkout's own ``.git`` is not the source's (a working tree copied to another
#: machine, whose ``.git`` may be an older copy); ``scripts/gpu/`` sets it
SOURCE_COMMIT_ENV = "PRIVNLU_SOURCE_COMMIT"


def _git_commit() -> str | None:
    """HEAD of the checkout privnlu runs from (with ``+dirty`` for local changes), or None if not a privnlu checkout;
    ``$PRIVNLU_SOURCE_COMMIT`` where set."""
    if os.environ.get(SOURCE_COMMIT_ENV):
        return os.environ[SOURCE_COMMIT_ENV]
    root = Path(__file__).resolve().parents[2]  # src/privnlu/io.py -> the checkout
    if not (root / "pyproject.toml").is_file() or not (root / ".git").exists():
        return None
    try:
        run = functools.partial(subprocess.run, cwd=root, capture_output=True, text=True, timeout=5, check=True)
        head = run(["git", "rev-parse", "HEAD"]).stdout.strip()
        dirty = run(["git", "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def _finite(obj: Any) -> Any:
    """``obj`` with non-finite floats replaced by "inf", "-inf" or "nan" (strict JSON has no Infinity/NaN)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def torch_save_atomic(path: str | os.PathLike[str], obj: Any, *, mode: int | None = None) -> Path:
    import torch

    return write_atomic(path, lambda p: torch.save(obj, p), mode=mode)


def write_secret(path: str | os.PathLike[str], obj: Any) -> Path:
    """Save key material with ``torch.save``, readable by the owner only (0600)."""
    return torch_save_atomic(path, obj, mode=SECRET_MODE)


def record_files(folder: str | os.PathLike[str], *, recursive: bool = False) -> list[Path]:
    """The result records of ``folder``: its ``*.json`` (and its subfolders' with ``recursive``), in name order,
    outside hidden files and folders (a recipe's scratch, checkpoints and trained models: ``.x.part.json``,
    ``.pretrain/``, ``.models/``)."""
    root = Path(folder)
    found = root.rglob("*.json") if recursive else root.glob("*.json")
    return sorted(f for f in found if not any(part.startswith(".") for part in f.relative_to(root).parts))


def repeat_name(stem: str, r: int) -> str:
    """A repeated run's record name: repeat 1 is the plain ``stem``, repeat r > 1 is ``stem-rR``."""
    return stem if r == 1 else f"{stem}-r{r}"


def repeat_of(stem: str) -> int:
    """The repeat a record name stands for, the inverse of :func:`repeat_name` (a plain name is repeat 1)."""
    _, sep, tail = stem.rpartition("-r")
    return int(tail) if sep and tail.isdigit() else 1


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and getattr(obj, "ndim", 0) == 0:
        return _finite(obj.item())
    if hasattr(obj, "tolist"):
        return _finite(obj.tolist())
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 4 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def is_pickle(path: str | Path) -> bool:
    """A torch.save zip or a raw pickle (protocol 2+ starts with 0x80), and not a safetensors file (whose first
    8 bytes are the header length, little-endian, followed by the JSON header's ``{``; that length's low byte
    may well be 0x80). Shared files from other parties are checked with this and never unpickled."""
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(9)
    if len(head) == 9 and head[8:9] == b"{" and 0 < int.from_bytes(head[:8], "little") <= path.stat().st_size - 8:
        return False
    return head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"


# -- outputs checked before any work ------------------------------------------------------------------------

def check_writable(path: str | os.PathLike[str], kind: str, flag: str, *, replace: bool = True) -> None:
    """One line (PrivnluError) unless ``path`` can be written as a ``kind`` ('file' or 'dir'); creates nothing.
    ``replace=False``: an existing file is refused too (the caller's ``--force`` lifts it)."""
    p = Path(path)
    if str(path) == "":
        raise PrivnluError(f"{flag}: empty path")
    if p.exists():
        if kind == "file" and p.is_dir():
            raise PrivnluError(f"{flag} {path} is a folder; give a file name")
        if kind == "dir" and not p.is_dir():
            raise PrivnluError(f"{flag} {path} is a file, not a folder")
        if kind == "file" and not replace:
            raise PrivnluError(f"{flag} {path} exists: refusing to replace an earlier result; choose another file, "
                               "or add --force")
        where = p if kind == "dir" else p.parent
        if not os.access(where, os.W_OK | os.X_OK):
            raise PrivnluError(f"{flag} {path}: the folder {where} is not writable")
        return
    anc = p.absolute().parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise PrivnluError(f"{flag} {path}: {anc} is a file, not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise PrivnluError(f"{flag} {path}: the folder {anc} is not writable")


# -- the process: signals and progress output --------------------------------------------------------------------

class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every atomic write removes its temporary file on the way out."""


def _on_sigterm(signum, frame) -> None:  # noqa: ARG001
    raise Terminated()


def install_signal_handlers() -> None:
    """SIGTERM unwinds like SIGINT: ``privnlu.io`` removes temporary files, checkpoints stay atomic."""
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (an embedding application): leave its signals alone
        pass


def silence_progress_bars() -> None:
    """``--quiet``: every tqdm bar of this process is disabled unless its caller passes ``disable=`` itself (the
    commands with their own ``--quiet`` handling do, with the same meaning)."""
    from functools import partialmethod

    from tqdm import std

    std.tqdm.__init__ = partialmethod(std.tqdm.__init__, disable=True)  # type: ignore[method-assign]


class PlainLines:
    """A non-terminal stderr (a ``nohup`` log) for progress bars: every carriage-return redraw becomes its own line,
    and the blank redraws that clear a bar are dropped, so ``tail`` and ``grep`` read one line per update."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._redrawn = False  # the last write was a redraw, already ended with a newline

    def write(self, text: str) -> int:
        n = len(text)
        text = text.replace("\x1b[A", "")  # a nested bar's cursor-up: each redraw is a line of its own here
        if "\r" in text:
            parts = [p.rstrip("\n") for p in text.split("\r") if p.strip()]
            self._stream.write("".join(p + "\n" for p in parts))
            self._redrawn = self._redrawn or bool(parts)
        elif not (text == "\n" and self._redrawn):  # a bar's closing newline: its line is already ended
            self._stream.write(text)
            self._redrawn = False
        return n

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def safe_filename(name: object, *, max_length: int = 80) -> str:
    """``name`` (a task name, a label from the records) as a portable file name of ``[A-Za-z0-9._-]`` only.

    A name that is already one is kept as it is. Any other (a ``/``, a quote, a space, a leading ``.`` or ``-``,
    nothing at all, or longer than ``max_length``) has every other character run replaced by ``_`` and gets a
    ``-`` and the first 8 hex digits of the SHA-256 of the original, so two names cannot share a file by accident.
    The result is never empty, ``.`` or ``..``, never hidden, and at most ``max_length`` characters.
    """
    import hashlib
    import re

    text = str(name)
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", text) and len(text) <= max_length:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip(".-")[: max(1, max_length - 9)].rstrip(".") or "_"
    return f"{stem}-{digest}"
