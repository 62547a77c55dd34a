"""Recording what crosses the wire, on the server side.

:class:`RecordingGrid` wraps the Flower ``Grid`` a ServerApp receives and
keeps a copy of every message the server sends and receives (all records:
arrays, metrics, configs, and errors). It is the eavesdropper's view: the test
that nothing secret leaves a client inspects it, and the gradient-matching
attack can run on a saved capture (:func:`load_capture`) instead of on
gradients computed in-process.

A capture on disk is one safetensors file (``wire.safetensors``): every array is a
tensor named ``<sent|received>/<entry>/<record>/<array name>``, and everything else
(rounds, node ids, message types, metrics, configs, errors) is JSON in the file's
header metadata. Nothing is pickled, so reading a capture from an untrusted party
executes no code; :func:`load_capture` refuses pickles (the old ``wire.pt``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from flwr.app import Message, RecordDict
from flwr.serverapp import Grid

from ..errors import PrivnluError
from ..io import is_pickle, write_atomic
from ..schemas import check_arrays, check_header

FORMAT = "privnlu-wire-v2"
WIRE_FILE = "wire.safetensors"


def snapshot(content: RecordDict) -> dict:
    """A plain copy of a message's records: ``{"arrays": {rec: {name: ndarray}}, "metrics": ..., "configs": ...}``."""
    return {
        "arrays": {k: {n: np.array(a.numpy(), copy=True) for n, a in rec.items()} for k, rec in content.array_records.items()},
        "metrics": {k: dict(rec) for k, rec in content.metric_records.items()},
        "configs": {k: dict(rec) for k, rec in content.config_records.items()},
    }


@dataclass
class WireLog:
    """Every message seen by the server. ``max_rounds`` > 0 keeps only the first rounds' arrays."""

    max_rounds: int = 0
    sent: list[dict] = field(default_factory=list)
    received: list[dict] = field(default_factory=list)

    def keep(self, rnd: int) -> bool:
        return self.max_rounds <= 0 or rnd <= self.max_rounds

    def record_sent(self, msg: Message, rnd: int) -> None:
        """The model goes to every sampled client; its arrays are stored once per round."""
        if not self.keep(rnd):
            return
        entry = {"round": rnd, "node_id": msg.metadata.dst_node_id, "type": msg.metadata.message_type}
        if not any(e["round"] == rnd and e["type"] == entry["type"] for e in self.sent):
            entry.update(snapshot(msg.content))
        self.sent.append(entry)

    def record_received(self, msg: Message, rnd: int) -> None:
        if not self.keep(rnd):
            return
        entry = {"round": rnd, "node_id": msg.metadata.src_node_id, "type": msg.metadata.message_type}
        if msg.has_error():
            entry["error"] = str(msg.error.reason)
        else:
            entry.update(snapshot(msg.content))
        self.received.append(entry)

    def save(self, path: str | Path) -> Path:
        """Write the capture as safetensors (arrays) with JSON metadata, atomically."""
        from safetensors.numpy import save_file

        tensors: dict[str, np.ndarray] = {}
        meta: dict[str, list] = {"sent": [], "received": []}
        for side in ("sent", "received"):
            for i, entry in enumerate(getattr(self, side)):
                e = {k: v for k, v in entry.items() if k != "arrays"}
                if "arrays" in entry:
                    e["arrays"] = {}
                    for rec, arrays in entry["arrays"].items():
                        e["arrays"][rec] = list(arrays)
                        for name, a in arrays.items():
                            tensors[f"{side}/{i}/{rec}/{name}"] = np.ascontiguousarray(a)
                meta[side].append(e)
        header = {"format": FORMAT, "entries": json.dumps(meta, default=_json_value)}
        return write_atomic(path, lambda tmp: save_file(tensors, str(tmp), metadata=header))


def _json_value(obj):
    if isinstance(obj, bytes):
        return {"__bytes__": base64.b64encode(obj).decode()}
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in a wire capture")


def load_capture(path: str | Path) -> WireLog:
    """Read a capture written by :meth:`WireLog.save`, validated (:mod:`privnlu.schemas.wire`). Never unpickles: a
    pickle is refused."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise PrivnluError(f"{path}: no such wire capture")
    if is_pickle(path):
        raise PrivnluError(f"{path}: a pickle; privnlu never unpickles a wire capture (it could run code). "
                           "Re-record it with this version (privnlu federated --record-wire writes wire.safetensors)")
    not_capture = f"{path}: not a privnlu wire capture (privnlu federated --record-wire)"
    try:
        f = safe_open(str(path), framework="numpy")
    except Exception:
        raise PrivnluError(not_capture) from None
    with f:
        try:
            header = f.metadata() or {}
            if header.get("format") != FORMAT:
                raise ValueError
            meta = json.loads(header["entries"])
        except Exception:
            raise PrivnluError(not_capture) from None
        check_header(meta, file=path)  # every entry's fields, before any array is read
        log = WireLog(0, meta["sent"], meta["received"])
        try:
            for side in ("sent", "received"):
                for i, entry in enumerate(getattr(log, side)):
                    if "arrays" in entry:
                        entry["arrays"] = {rec: {n: f.get_tensor(f"{side}/{i}/{rec}/{n}") for n in names}
                                           for rec, names in entry["arrays"].items()}
        except Exception:
            raise PrivnluError(f"{path}: an array the header lists is missing from the file") from None
    check_arrays(log.sent, log.received, file=path)  # finite, and each reply shaped like the round's model
    return log


def _round_of(messages: list[Message]) -> int:
    for m in messages:
        cfg = m.content.config_records.get("config") if m.has_content() else None
        if cfg is not None and "server-round" in cfg:
            return int(cfg["server-round"])
    return 0


class RecordingGrid(Grid):
    """A Grid that forwards everything to ``inner`` and logs each message to ``log``."""

    def __init__(self, inner: Grid, log: WireLog) -> None:
        self.inner = inner
        self.log = log

    def set_run(self, run) -> None:
        self.inner.set_run(run)

    @property
    def run(self):
        return self.inner.run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None) -> Message:
        return self.inner.create_message(content, message_type, dst_node_id, group_id, ttl)

    def get_node_ids(self) -> Iterable[int]:
        return self.inner.get_node_ids()

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        messages = list(messages)
        rnd = _round_of(messages)
        for m in messages:
            self.log.record_sent(m, rnd)
        return self.inner.push_messages(messages)

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        replies = list(self.inner.pull_messages(message_ids))
        for r in replies:
            self.log.record_received(r, -1)
        return replies

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        messages = list(messages)
        rnd = _round_of(messages)
        for m in messages:
            self.log.record_sent(m, rnd)
        replies = list(self.inner.send_and_receive(messages, timeout=timeout))
        for r in replies:
            self.log.record_received(r, rnd)
        return replies
