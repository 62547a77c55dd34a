"""Server strategies: TextHide Algorithm 2 (FedSGD) and FedAvg, on Flower's message API.

:class:`TextHideFedSGD` is Flower's :class:`~flwr.serverapp.strategy.FedAvg`
with one change: replies carry gradients, not weights. It reuses FedAvg's node
sampling, reply checks and example-weighted averaging of ArrayRecords, so the
averaged record is

    g_t = sum_c (b_c / sum_c' b_c') g_c,     g_c = grad L(W_t; hidden batch of client c)

i.e. exactly the gradient of the mean loss over the union of the clients' hidden
batches (each client's loss is a mean over its ``b_c`` examples). The server
then takes one optimizer step ``W_{t+1} = opt(W_t, g_t)`` (Adam by default; SGD
gives the paper's ``W_{t+1} = W_t - eta g_t``) and sends ``W_{t+1}`` next round.

The FedAvg option is Flower's FedAvg itself, with clients taking several local
steps. Extras wrap either strategy in Flower's usual way (both are ordinary
``Strategy`` objects); client-level DP for FedSGD is :class:`~.dp.DPFedSGD`, and secure aggregation
with Flower's SecAgg+ is :class:`~.secagg_plus.SecAggPlusFedSGD`.
Failed replies (a crashed client) are dropped by FedAvg's reply checks and the
round goes on with the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg

from .model import record_to_tensors, tensors_to_record


class ResumableRounds:
    """Mixin: number rounds from ``round_offset + 1`` so a resumed run continues its count, and run
    client-side evaluation only every ``eval_every`` rounds (and in the last)."""

    round_offset: int = 0
    eval_every: int = 1
    total_rounds: int = 0
    last_train_metrics: MetricRecord | None = None
    last_eval_metrics: MetricRecord | None = None

    def evaluates(self, server_round: int) -> bool:
        g = server_round + self.round_offset
        return bool(self.eval_every) and (g % self.eval_every == 0 or g == self.total_rounds)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        self.last_eval_metrics = None
        if not self.evaluates(server_round):
            return []
        return super().configure_evaluate(server_round + self.round_offset, arrays, config, grid)  # type: ignore[misc]

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        replies = list(replies)
        if not replies:
            return None
        self.last_eval_metrics = super().aggregate_evaluate(server_round + self.round_offset, replies)  # type: ignore[misc]
        return self.last_eval_metrics

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        return super().configure_train(server_round + self.round_offset, arrays, config, grid)  # type: ignore[misc]

    def aggregate_train(self, server_round: int, replies: Iterable[Message]):
        arrays, metrics = super().aggregate_train(server_round + self.round_offset, replies)  # type: ignore[misc]
        self.last_train_metrics = metrics
        return arrays, metrics

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class FedAvgTextHide(ResumableRounds, FedAvg):
    """Flower's FedAvg (clients send weights after ``local_steps`` steps), resumable."""


class TextHideFedSGD(ResumableRounds, FedAvg):
    """TextHide Algorithm 2: average the clients' gradients, then one server optimizer step.

    Args:
        initial: the global parameters ``W_0`` by wire name (``head.*``, ``encoder.*``).
        lr: server learning rate for the head; ``encoder_lr`` for ``encoder.*``.
        optimizer: ``adam`` or ``sgd`` (plain ``W - lr g``).
        **kwargs: Flower FedAvg sampling options (``min_available_nodes`` ...).
    """

    def __init__(self, *, initial: dict[str, torch.Tensor], lr: float, encoder_lr: float | None = None,
                 optimizer: str = "adam", **kwargs) -> None:
        kwargs.setdefault("weighted_by_key", "num-examples")
        super().__init__(**kwargs)
        self.params = {n: torch.nn.Parameter(t.detach().clone().float()) for n, t in initial.items()}
        head = [p for n, p in self.params.items() if not n.startswith("encoder.")]
        enc = [p for n, p in self.params.items() if n.startswith("encoder.")]
        groups = [{"params": head, "lr": lr}] + ([{"params": enc, "lr": encoder_lr or lr}] if enc else [])
        self.optimizer: torch.optim.Optimizer = (torch.optim.Adam(groups) if optimizer == "adam"
                                                 else torch.optim.SGD(groups, lr=lr))

    def arrays(self) -> ArrayRecord:
        return tensors_to_record({n: p.detach() for n, p in self.params.items()})

    def apply_gradient(self, grads: dict[str, torch.Tensor]) -> None:
        """One optimizer step with the averaged gradient ``g_t``."""
        if set(grads) != set(self.params):
            raise ValueError("the averaged gradient does not match the global model's parameters")
        for name, p in self.params.items():
            p.grad = grads[name].to(p.dtype).reshape(p.shape)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        mean_grad, metrics = super().aggregate_train(server_round, replies)  # FedAvg's weighted average
        if mean_grad is None:
            return None, metrics  # every client failed: keep W_t
        self.apply_gradient(record_to_tensors(mean_grad))
        return self.arrays(), metrics

    def state_dict(self) -> dict:
        return {"params": {n: p.detach().clone() for n, p in self.params.items()}, "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(state["params"][n])
        self.optimizer.load_state_dict(state["optimizer"])
