"""Run checkpoints that never run code: a safetensors file of tensors and a JSON file of everything else.

``privnlu train``, ``privnlu federated``, ``privnlu dchi pretrain`` and ``privnlu dchi finetune`` continue an
interrupted run from a checkpoint. A checkpoint named ``<base>.pt`` by its caller (the name older privnlu versions
gave the single pickle file) is the pair

* ``<base>.safetensors``: model weights, optimizer moments, ``torch`` RNG and data-order generator states (uint8
  tensors); the safetensors metadata repeats the format and the step;
* ``<base>.json``: the step, the run's settings, its history, the seeded secret stream's position (PCG64 integers),
  the optimizer's parameter-group hyperparameters and the scheduler's counters, the SHA-256 and the size of the
  safetensors file, and the name, dtype and shape of every tensor in it.

Writing: both files go to temporary files beside their destinations, then the tensors are renamed into place and
the JSON last, with SIGINT/SIGTERM held back between the two renames; a reader checks the hash, the size and the
step recorded in both, so a pair from two different writes is refused, never mixed. Reading parses JSON and
safetensors only (no pickle, no ``torch.load``); the JSON is validated by pydantic models (types, ranges,
finiteness) and the tensors against the live model and optimizer (names, shapes, dtypes, finite values) before
anything is loaded. An older pickle checkpoint (``<base>.pt``) is refused in one line and never opened.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal, Sequence, TypeVar

import torch
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ..errors import PrivnluError
from ..io import json_text

FORMAT = "privnlu-checkpoint"
VERSION = 1
WRITERS = ("train", "finetune", "pretrain", "federated")
#: the largest JSON sidecar read (the settings and history of a run are kilobytes)
MAX_META_BYTES = 64 * 2**20
LEGACY = ("is an older pickle checkpoint; privnlu does not unpickle it: delete it to start the run again (privnlu "
          "train: or start again with --force)")

M = TypeVar("M", bound=BaseModel)


# -- the JSON side's schema --------------------------------------------------------------------------------------

class Strict(BaseModel):
    """A strict, closed JSON object: no coercion ("1" is not 1), no unknown field, no NaN or infinity."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, populate_by_name=True)


Count = Annotated[int, Field(ge=0)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
#: a recorded number; records write NaN/infinity as the strings privnlu.io uses
Recorded = float | Literal["nan", "inf", "-inf"] | None


class TensorInfo(Strict):
    dtype: Literal["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
    shape: list[Count]


class Envelope(Strict):
    """The sidecar: what every checkpoint has; ``state`` is validated by the writer's own model."""

    format: Literal["privnlu-checkpoint"]
    version: Literal[1]
    written_by: Literal["train", "finetune", "pretrain", "federated"]
    step: Count
    tensors_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    tensors_bytes: Annotated[int, Field(ge=8)]
    tensors: dict[str, TensorInfo]
    state: dict[str, JsonValue]


class PCG64Inner(Strict):
    state: Annotated[int, Field(ge=0, lt=2**128)]
    inc: Annotated[int, Field(ge=0, lt=2**128)]


class PCG64State(Strict):
    """A seeded :class:`~privnlu.rng.SecretGenerator`'s position (numpy's PCG64 state)."""

    bit_generator: Literal["PCG64"]
    state: PCG64Inner
    has_uint32: Annotated[int, Field(ge=0, le=1)]
    uinteger: Annotated[int, Field(ge=0, lt=2**32)]


class OptimizerMeta(Strict):
    """An optimizer's state dict without its tensors: hyperparameters per group, non-tensor values per parameter,
    and the names of each parameter's tensors (stored as ``<prefix>.state.<id>.<name>``)."""

    param_groups: list[dict[str, bool | int | Finite | None | list[Finite] | list[int]]]
    scalars: dict[Annotated[str, Field(pattern=r"^[0-9]{1,9}$")], dict[str, bool | int | Finite | None]]
    tensors: dict[Annotated[str, Field(pattern=r"^[0-9]{1,9}$")], list[Annotated[str, Field(pattern=r"^\w{1,64}$")]]]


class SchedulerState(Strict):
    """A ``LambdaLR``'s counters (its lambdas are code and are never stored: every entry is null)."""

    model_config = ConfigDict(strict=True, extra="allow", allow_inf_nan=False, populate_by_name=True)

    base_lrs: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]]
    last_epoch: Annotated[int, Field(ge=-1)]
    lr_lambdas: list[None]


def validate(model: type[M], data: Any, path: Path) -> M:
    """``model`` of ``data``, or one line naming the file and the first bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "the top level"
        raise PrivnluError(f"checkpoint {path} is not a valid privnlu checkpoint ({where}: {err['msg']}); delete it "
                           "to start over") from None


# -- files -------------------------------------------------------------------------------------------------------

def files(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The (tensors, JSON) pair of the checkpoint its caller names ``path`` (``x.pt`` -> ``x.safetensors``,
    ``x.json``)."""
    p = Path(path)
    base = p.with_suffix("") if p.suffix == ".pt" else p
    return base.with_name(base.name + ".safetensors"), base.with_name(base.name + ".json")


def legacy_file(path: str | os.PathLike[str]) -> Path:
    """Where an older privnlu wrote the pickle checkpoint of ``path``."""
    p = Path(path)
    return p if p.suffix == ".pt" else p.with_name(p.name + ".pt")


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether any file of the checkpoint (new pair or older pickle) is there."""
    return legacy_file(path).exists() or any(f.exists() for f in files(path))


def remove(path: str | os.PathLike[str]) -> None:
    """Delete the checkpoint (both files, and an older pickle one)."""
    for f in (*files(path), legacy_file(path)):
        f.unlink(missing_ok=True)


def refuse_legacy(path: str | os.PathLike[str]) -> None:
    """One line if an older pickle checkpoint is where this run keeps its checkpoint; the file is not opened."""
    old = legacy_file(path)
    if old.exists():
        raise PrivnluError(f"checkpoint {old} {LEGACY}")


# -- writing -----------------------------------------------------------------------------------------------------

def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def save(path: str | os.PathLike[str], *, written_by: str, step: int, tensors: dict[str, torch.Tensor],
         state: dict[str, Any], mode: int | None = None) -> None:
    """Write the checkpoint pair of ``path`` atomically (see the module docstring); ``mode`` (e.g. 0600) applies to
    both files from the moment they exist."""
    from safetensors.torch import save as st_save

    assert written_by in WRITERS
    clean = {k: v.detach().to("cpu").contiguous().clone() for k, v in tensors.items()}
    blob = st_save(clean, metadata={"format": FORMAT, "step": str(int(step))})
    meta = {"format": FORMAT, "version": VERSION, "written_by": written_by, "step": int(step),
            "tensors_sha256": hashlib.sha256(blob).hexdigest(), "tensors_bytes": len(blob),
            "tensors": {k: {"dtype": dtype_name(v), "shape": list(v.shape)} for k, v in clean.items()},
            "state": state}
    text = json_text(meta) + "\n"
    tpath, jpath = files(path)
    tpath.parent.mkdir(parents=True, exist_ok=True)
    for dest in (tpath, jpath):  # a SIGKILLed writer's temporary files
        for stale in dest.parent.glob(f".{dest.name}.*.tmp"):
            stale.unlink(missing_ok=True)
    tmps: list[Path] = []
    try:
        for dest, data in ((tpath, blob), (jpath, text.encode("utf-8"))):
            fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
            tmps.append(Path(tmp))
            if mode is not None:
                os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        with _signals_held():
            os.replace(tmps[0], tpath)
            os.replace(tmps[1], jpath)  # the JSON last: it names the tensors file's hash
    finally:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
    old = legacy_file(path)
    if old not in (tpath, jpath):
        old.unlink(missing_ok=True)  # a fresh run (--force) replaces an older pickle checkpoint


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends (the main thread, where POSIX allows it)."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    except (AttributeError, ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# -- reading -----------------------------------------------------------------------------------------------------

@dataclass
class Checkpoint:
    """A checkpoint read and checked by :func:`load`; ``state`` is the writer's validated model."""

    path: Path
    step: int
    tensors: dict[str, torch.Tensor]
    state: Any

    def take(self, prefix: str) -> dict[str, torch.Tensor]:
        """The tensors under ``prefix.`` with the prefix removed."""
        cut = len(prefix) + 1
        return {k[cut:]: v for k, v in self.tensors.items() if k.startswith(prefix + ".")}

    def tensor(self, name: str, *, dtype: torch.dtype | None = None, shape: Sequence[int] | None = None) -> torch.Tensor:
        """One tensor by name, checked for dtype and shape."""
        t = self.tensors.get(name)
        if t is None:
            raise self.error(f"tensor '{name}' is missing")
        if (dtype is not None and t.dtype != dtype) or (shape is not None and list(t.shape) != list(shape)):
            raise self.error(f"tensor '{name}' is {dtype_name(t)} {list(t.shape)}, not {dtype} {list(shape or [])}")
        return t

    def error(self, what: str) -> PrivnluError:
        return PrivnluError(f"checkpoint {self.path} does not fit this run ({what}); delete it to start over")


def load(path: str | os.PathLike[str], *, written_by: str, state: type[M]) -> Checkpoint:
    """Read and check the checkpoint pair of ``path`` (see the module docstring). Every problem is one line."""
    refuse_legacy(path)
    tpath, jpath = files(path)
    for have, lack in ((tpath, jpath), (jpath, tpath)):
        if have.exists() and not lack.exists():
            raise PrivnluError(f"checkpoint {have} has no {lack.name} beside it (an incomplete checkpoint); delete "
                               f"{have.name} to start over")
    if not jpath.is_file():
        raise PrivnluError(f"checkpoint {jpath}: no such file")
    if jpath.stat().st_size > MAX_META_BYTES:
        raise PrivnluError(f"checkpoint {jpath} is larger than any privnlu checkpoint's settings; delete it to "
                           "start over")
    try:
        raw = json.loads(jpath.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise PrivnluError(f"checkpoint {jpath} is not valid JSON (corrupt or truncated); delete it and "
                           f"{tpath.name} to start over") from None
    env = validate(Envelope, raw, jpath)
    if env.written_by != written_by:
        raise PrivnluError(f"checkpoint {jpath} was written by privnlu {env.written_by}, not {written_by}; use "
                           "another output folder")
    tensors = _read_tensors(tpath, env)
    return Checkpoint(tpath, env.step, tensors, validate(state, env.state, jpath))


def read(path: str | os.PathLike[str], prefix: str | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, JSON state) of a checkpoint, checked against each other but not against a run (for inspection);
    with ``prefix``, only the tensors under it, without the prefix."""
    refuse_legacy(path)
    tpath, jpath = files(path)
    env = validate(Envelope, json.loads(jpath.read_text(encoding="utf-8")), jpath)
    c = Checkpoint(tpath, env.step, _read_tensors(tpath, env), None)
    return (c.take(prefix) if prefix else c.tensors), dict(env.state)


def _read_tensors(tpath: Path, env: Envelope) -> dict[str, torch.Tensor]:
    from safetensors.torch import load as st_load

    size = tpath.stat().st_size
    if size != env.tensors_bytes:
        raise PrivnluError(f"checkpoint {tpath} has {size} bytes where its JSON records {env.tensors_bytes} "
                           "(truncated, or from another write); delete both files to start over")
    data = tpath.read_bytes()
    if data[:1] == b"\x80" or data[:4] == b"PK\x03\x04":
        raise PrivnluError(f"checkpoint {tpath} is a pickle, not safetensors; privnlu does not unpickle it: delete "
                           "it to start over")
    if hashlib.sha256(data).hexdigest() != env.tensors_sha256:
        raise PrivnluError(f"checkpoint {tpath} does not match its JSON (SHA-256 differs: changed, or from another "
                           "write); delete both files to start over")
    try:
        tensors = st_load(data)
        header_len = int.from_bytes(data[:8], "little")
        header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    except Exception:
        raise PrivnluError(f"checkpoint {tpath} is not a readable safetensors file; delete it to start over") from None
    metadata = header.get("__metadata__") or {}
    if metadata.get("format") != FORMAT or metadata.get("step") != str(env.step):
        raise PrivnluError(f"checkpoint {tpath} records another step than its JSON; delete both files to start over")
    listed = {k: (v.dtype, v.shape) for k, v in env.tensors.items()}
    found = {k: (dtype_name(v), list(v.shape)) for k, v in tensors.items()}
    if listed != found:
        raise PrivnluError(f"checkpoint {tpath} holds other tensors than its JSON lists; delete both files to start "
                           "over")
    return tensors


# -- checks against the live run -----------------------------------------------------------------------------------

def check_finite(ckpt: Checkpoint, tensors: dict[str, torch.Tensor], what: str) -> None:
    bad = next((k for k, v in tensors.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())), None)
    if bad is not None:
        raise ckpt.error(f"{what} '{bad}' holds NaN or infinite values")


def load_module(ckpt: Checkpoint, prefix: str, module: torch.nn.Module) -> None:
    """Load ``module``'s state from the tensors under ``prefix`` after checking names, shapes, dtypes and
    finiteness."""
    load_tensors(ckpt, prefix, module.state_dict())
    module.load_state_dict(ckpt.take(prefix))


def load_tensors(ckpt: Checkpoint, prefix: str, live: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors under ``prefix``, checked against ``live`` (same names, shapes and dtypes, finite)."""
    saved = ckpt.take(prefix)
    missing, extra = sorted(set(live) - set(saved)), sorted(set(saved) - set(live))
    if missing or extra:
        name = (missing or extra)[0]
        raise ckpt.error(f"{prefix}: '{name}' is {'missing' if missing else 'not in this run'}")
    for k, v in live.items():
        if saved[k].shape != v.shape or saved[k].dtype != v.dtype:
            raise ckpt.error(f"{prefix}.{k} is {dtype_name(saved[k])} {list(saved[k].shape)}, the model's "
                             f"{dtype_name(v)} {list(v.shape)}")
    check_finite(ckpt, saved, prefix)
    return saved


def rng_state(ckpt: Checkpoint, name: str, live: torch.Tensor) -> torch.Tensor:
    """A ``torch`` generator state (uint8) of the same length as ``live``'s."""
    return ckpt.tensor(name, dtype=torch.uint8, shape=list(live.shape))


# -- optimizers and schedulers ---------------------------------------------------------------------------------------

def flatten_optimizer(optimizer: torch.optim.Optimizer, prefix: str) -> tuple[dict[str, torch.Tensor], dict]:
    """``optimizer``'s state dict as (tensors named ``<prefix>.state.<id>.<name>``, :class:`OptimizerMeta` JSON)."""
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict] = {}
    names: dict[str, list[str]] = {}
    for pid, st in sd["state"].items():
        names[str(pid)] = []
        scalars[str(pid)] = {}
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"{prefix}.state.{pid}.{k}"] = v
                names[str(pid)].append(k)
            else:
                scalars[str(pid)][k] = v
    groups = [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars, "tensors": names}


def load_optimizer(ckpt: Checkpoint, prefix: str, meta: OptimizerMeta, optimizer: torch.optim.Optimizer) -> None:
    """Check the saved optimizer state against ``optimizer`` (groups, hyperparameter types and ranges, parameter ids,
    tensor shapes, finiteness), then load it."""
    live = optimizer.state_dict()
    params = [p for g in optimizer.param_groups for p in g["params"]]
    ids = [i for g in live["param_groups"] for i in g["params"]]
    shape_of = dict(zip(ids, (p.shape for p in params)))
    if len(meta.param_groups) != len(live["param_groups"]):
        raise ckpt.error(f"{prefix}: {len(meta.param_groups)} parameter groups, this run has {len(live['param_groups'])}")
    groups = []
    for gi, (saved, own) in enumerate(zip(meta.param_groups, live["param_groups"])):
        if set(saved) != set(own):
            raise ckpt.error(f"{prefix} group {gi}: settings {sorted(set(saved) ^ set(own))} differ")
        group: dict[str, Any] = {}
        for k, v in own.items():
            group[k] = _group_value(ckpt, f"{prefix} group {gi} {k}", saved[k], v)
        groups.append(group)
    state: dict[int, dict[str, Any]] = {}
    if set(meta.scalars) != set(meta.tensors):
        raise ckpt.error(f"{prefix}: parameter ids differ between its values and its tensors")
    for key, names in meta.tensors.items():
        pid = int(key)
        if pid not in shape_of:
            raise ckpt.error(f"{prefix}: parameter id {pid} is not in this run's optimizer")
        entry: dict[str, Any] = dict(meta.scalars[key])
        for name in names:
            t = ckpt.tensor(f"{prefix}.state.{pid}.{name}")
            want = [] if name == "step" else list(shape_of[pid])
            if list(t.shape) != want or not t.is_floating_point():
                raise ckpt.error(f"{prefix}.state.{pid}.{name} has shape {list(t.shape)}, not {want}")
            entry[name] = t
        state[pid] = entry
    check_finite(ckpt, {k: v for k, v in ckpt.tensors.items() if k.startswith(prefix + ".")}, prefix)
    stray = [k for k in ckpt.take(prefix) if k.split(".")[0] != "state" or len(k.split(".")) != 3
             or k.split(".")[2] not in meta.tensors.get(k.split(".")[1], [])]
    if stray:
        raise ckpt.error(f"{prefix}.{stray[0]} is not part of the optimizer's state")
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def _group_value(ckpt: Checkpoint, what: str, saved: Any, own: Any) -> Any:
    """A saved hyperparameter, of the live value's kind (flag, number, pair, id list), finite and not negative."""
    if own is None or isinstance(own, bool):
        if saved is not None and not isinstance(saved, bool):
            raise ckpt.error(f"{what} is {saved!r}, not a flag")
        return saved
    if isinstance(own, (int, float)):
        if isinstance(saved, bool) or not isinstance(saved, (int, float)) or saved < 0:
            raise ckpt.error(f"{what} is {saved!r}, not a number >= 0")
        return saved
    if isinstance(own, (list, tuple)):
        if not isinstance(saved, list) or len(saved) != len(own):
            raise ckpt.error(f"{what} is {saved!r}, not {len(own)} values")
        if own and isinstance(own[0], int) and not isinstance(own[0], bool):  # the parameter ids
            if saved != list(own):
                raise ckpt.error(f"{what}: other parameters than this run's")
            return list(own)
        elif any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in saved):
            raise ckpt.error(f"{what} is {saved!r}, not numbers >= 0")
        return tuple(saved) if isinstance(own, tuple) else list(saved)
    raise ckpt.error(f"{what}: a setting of a kind privnlu does not store")


def load_scheduler(ckpt: Checkpoint, saved: SchedulerState, scheduler: torch.optim.lr_scheduler.LRScheduler) -> None:
    """Check the saved counters against ``scheduler`` (same keys and group count, scalar values), then load them."""
    own = scheduler.state_dict()
    data = saved.model_dump()
    if set(data) != set(own):
        raise ckpt.error(f"scheduler settings {sorted(set(data) ^ set(own))} differ")
    if len(saved.base_lrs) != len(own["base_lrs"]) or len(saved.lr_lambdas) != len(own["lr_lambdas"]):
        raise ckpt.error("the scheduler has another number of parameter groups")
    for k, v in data.items():
        vals = v if isinstance(v, list) else [v]
        if any(not (x is None or isinstance(x, (bool, int, float))) for x in vals):
            raise ckpt.error(f"scheduler setting {k} is not a number or flag")
        if any(isinstance(x, float) and not math.isfinite(x) for x in vals):
            raise ckpt.error(f"scheduler setting {k} is not finite")
    scheduler.load_state_dict(data)


def same_settings(saved: Any, current: Any) -> bool:
    """Whether recorded settings equal the current ones, as JSON (tuples are lists there)."""
    return json.loads(json_text(saved)) == json.loads(json_text(current))
