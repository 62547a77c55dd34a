"""Test helpers for the federated tests: an in-process Grid and secret-leak detectors."""

from __future__ import annotations

import numpy as np
import torch
from flwr.app import Context, Error, Message, RecordDict
from flwr.serverapp import Grid


class InProcessGrid(Grid):
    """Calls a ClientApp directly, one Context per node (for logic tests; the real Flower
    Simulation Runtime is exercised by the Ray-based test). A raising client becomes an
    error reply, as in Flower's runtime."""

    def __init__(self, client_app, clients: int, run_config: dict | None = None, alive=None) -> None:
        self.app = client_app
        self.alive = alive  # callable(node_id, round) -> bool: False = no reply (dropped)
        self.contexts = {
            100 + i: Context(run_id=1, node_id=100 + i, node_config={"partition-id": i, "num-partitions": clients},
                             state=RecordDict(), run_config=dict(run_config or {}))
            for i in range(clients)
        }

    def set_run(self, run) -> None:
        pass

    @property
    def run(self):
        return None

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content=content, message_type=message_type, dst_node_id=dst_node_id, group_id=group_id)

    def get_node_ids(self):
        return list(self.contexts)

    def push_messages(self, messages):
        raise NotImplementedError

    def pull_messages(self, message_ids):
        raise NotImplementedError

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for msg in messages:
            nid = msg.metadata.dst_node_id
            rnd = int(msg.content["config"]["server-round"])
            if self.alive is not None and not self.alive(nid, rnd):
                continue
            try:
                replies.append(self.app(msg, self.contexts[nid]))
            except Exception as exc:  # noqa: BLE001 - mimic Flower's runtime
                replies.append(Message(Error(code=0, reason=f"{type(exc).__name__}: {exc}"), reply_to=msg))
        return replies


def max_abs_cosine(arrays: list[np.ndarray], secrets: torch.Tensor) -> float:
    """The largest |cos| between any row or column of any array and any secret vector
    (a vector recoverable up to scale from a message scores 1)."""
    s = torch.nn.functional.normalize(secrets.double(), dim=1)
    best = 0.0
    for a in arrays:
        t = torch.from_numpy(np.asarray(a, dtype=np.float64))
        if t.ndim == 1:
            t = t[None]
        if t.ndim != 2:
            t = t.reshape(t.shape[0], -1)
        for vecs in (t, t.T):
            if vecs.shape[1] != s.shape[1]:
                continue
            v = torch.nn.functional.normalize(vecs, dim=1)
            ok = vecs.norm(dim=1) > 1e-12
            if ok.any():
                best = max(best, float((v[ok] @ s.T).abs().max()))
    return best


def ensure_task_identity() -> None:
    """Flower stamps new messages with the running task's ids; outside a Flower runtime
    (direct strategy/ClientApp tests) give them placeholder values."""
    from flwr.supercore.task_identity import TaskIdentity

    for name in ("run_id", "node_id", "task_id"):
        try:
            getattr(TaskIdentity, name)
        except RuntimeError:
            setattr(TaskIdentity, name, 1)
