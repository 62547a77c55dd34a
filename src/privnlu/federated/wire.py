"""Recording what crosses the wire, on the server side.

:class:`RecordingGrid` wraps the Flower ``Grid`` a ServerApp receives and
keeps a copy of every message the server sends and receives (all records:
arrays, metrics, configs, and errors). It is the eavesdropper's view: the test
that nothing secret leaves a client inspects it, and the gradient-matching
attack can run on a saved capture (:func:`load_capture`) instead of on
gradients computed in-process.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from flwr.app import Message, RecordDict
from flwr.serverapp import Grid

from ..errors import PrivnluError
from ..io import torch_save_atomic


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
        return torch_save_atomic(path, {"format": "privnlu-wire-v1", "sent": self.sent, "received": self.received})


def load_capture(path: str | Path) -> WireLog:
    try:
        blob = torch.load(path, map_location="cpu", weights_only=False)
        if blob.get("format") != "privnlu-wire-v1":
            raise ValueError
    except Exception:
        raise PrivnluError(f"{path}: not a privnlu wire capture (privnlu federated --record-wire)") from None
    return WireLog(0, blob["sent"], blob["received"])


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
