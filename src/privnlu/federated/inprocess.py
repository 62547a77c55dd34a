"""A Flower ``Grid`` that runs the ClientApp in this process, one ``Context`` per virtual node.

The same ServerApp loop (:func:`~.server.run_server`) and the same ClientApp code as in Flower's
Simulation Runtime and in a deployment, minus Ray and the network: each message is handed to
``ClientApp(message, context)`` directly, sequentially. A raising client becomes an error reply,
as in Flower's runtimes; ``alive(node_id, round)`` returning False drops a reply (a silent node).
Use it for long single-machine runs on few cores (``privnlu federated --backend inprocess``) and
for tests; it does not exercise Flower's transport.
"""

from __future__ import annotations

import copy

from flwr.app import Context, Error, Message, RecordDict
from flwr.serverapp import Grid

FIRST_NODE_ID = 100  # node ids are 100 + partition id


def ensure_task_identity() -> None:
    """Flower stamps new messages with the running task's ids; outside a Flower runtime
    (this grid, direct strategy/ClientApp calls) give them placeholder values."""
    from flwr.supercore.task_identity import TaskIdentity

    for name in ("run_id", "node_id", "task_id"):
        try:
            getattr(TaskIdentity, name)
        except RuntimeError:
            setattr(TaskIdentity, name, 1)


def _delivered(msg: Message) -> Message:
    """The message as its node receives it: same metadata, its own copy of the content."""
    out = copy.copy(msg)
    out.content = copy.deepcopy(msg.content)
    return out


class InProcessGrid(Grid):
    """Calls a ClientApp directly for each message (see the module docstring)."""

    def __init__(self, client_app, clients: int, run_config: dict | None = None, alive=None) -> None:
        ensure_task_identity()
        self.app = client_app
        self.alive = alive
        self.contexts = {
            FIRST_NODE_ID + i: Context(run_id=1, node_id=FIRST_NODE_ID + i,
                                       node_config={"partition-id": i, "num-partitions": clients},
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
        raise NotImplementedError("InProcessGrid answers in send_and_receive only")

    def pull_messages(self, message_ids):
        raise NotImplementedError("InProcessGrid answers in send_and_receive only")

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for msg in messages:
            nid = msg.metadata.dst_node_id
            cfg = msg.content.config_records.get("config")  # SecAgg+ stage messages carry the round as group id
            rnd = int(cfg["server-round"]) if cfg is not None and "server-round" in cfg else int(msg.metadata.group_id or 0)
            if self.alive is not None and not self.alive(nid, rnd):
                continue
            try:  # a copy, as a transport would deliver it (Flower may send one content object to every node)
                replies.append(self.app(_delivered(msg), self.contexts[nid]))
            except Exception as exc:  # noqa: BLE001 - mimic Flower's runtime
                replies.append(Message(Error(code=0, reason=f"{type(exc).__name__}: {exc}"), reply_to=msg))
        return replies
