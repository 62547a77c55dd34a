"""Client-level differential privacy for FedSGD, added by wrapping the strategy (Flower style).

:class:`DPFedSGD` wraps a :class:`~.strategy.TextHideFedSGD` the way Flower's
``DifferentialPrivacyServerSideFixedClipping`` wraps FedAvg, but for gradients
instead of model updates (DP-FedSGD; McMahan et al. 2018, "Learning differentially
private recurrent language models", Algorithm 1 with a fixed denominator). Each round
with ``n`` sampled clients and client gradients ``g_c``:

    g~_c = g_c * min(1, C / ||g_c||_2)            (clip the whole gradient, all arrays)
    g_t  = (sum_c g~_c + N(0, (z C)^2 I)) / n      (Gaussian noise, noise multiplier z)

then the wrapped strategy takes its usual server step with ``g_t``. Adding or removing
one client changes ``sum_c g~_c`` by at most ``C`` (L2), so each round is a Gaussian
mechanism with noise multiplier ``z`` for *client-level* adjacency (add/remove one
client's whole data). ``T`` rounds compose to ``T`` Gaussian mechanisms, accounted
with Google's ``dp-accounting`` (PLD). No privacy amplification by client sampling is
claimed (Flower samples a fixed number of nodes, not Poisson): the bound is conservative
when ``--fraction-train < 1``. The averaging is unweighted (each client counts once,
whatever its batch size), and a client that drops out still counts in ``n``
(fixed denominator), so the sensitivity stays ``C / n``.

What this protects: the *global model* (and anything computed from it) against
inference about one client. It does not hide a client's own gradient from an
eavesdropper on the wire: clipping happens on the server (client-side DP-SGD,
:mod:`.client_dp`, is what bounds what the wire carries, per example). The noise is drawn from :class:`~privnlu.rng.SecretGenerator`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from ..errors import require
from ..rng import SecretGenerator
from ..mechanisms.dp_fedsgd import check_dp_settings, epsilon_spent
from .model import record_to_tensors
from .strategy import TextHideFedSGD


def clip_gradient(grads: dict[str, torch.Tensor], clipping_norm: float) -> tuple[dict[str, torch.Tensor], float]:
    """Scale all arrays together so that their joint L2 norm is at most ``C``; returns (clipped, original norm)."""
    norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())))
    scale = min(1.0, clipping_norm / norm) if norm > 0 else 1.0
    return {n: g * scale for n, g in grads.items()}, norm


class DPFedSGD(Strategy):
    """Wrap a FedSGD strategy with server-side clipping and Gaussian noise (client-level DP).

    Args:
        strategy: the :class:`TextHideFedSGD` to wrap (it keeps sampling, evaluation and its server step).
        noise_multiplier: ``z``; the noise std on the sum of clipped gradients is ``z C``.
        clipping_norm: ``C``, the L2 bound on each client's whole gradient.
        num_sampled_clients: ``n``, the clients sampled per round (the fixed denominator).
        delta: the delta at which the spent epsilon is reported.
        rng: source of the noise (secure by default).
    """

    def __init__(self, strategy: TextHideFedSGD, *, noise_multiplier: float, clipping_norm: float,
                 num_sampled_clients: int, delta: float, rng: SecretGenerator | None = None) -> None:
        super().__init__()
        require(isinstance(strategy, TextHideFedSGD),
                "gradient-space DP wraps a FedSGD strategy (clients send gradients); for FedAvg use Flower's "
                "DifferentialPrivacyServerSideFixedClipping")
        check_dp_settings(clipping_norm=clipping_norm, noise_multiplier=noise_multiplier, delta=delta)
        require(isinstance(num_sampled_clients, int) and num_sampled_clients >= 1,
                f"the number of sampled clients must be an integer >= 1, not {num_sampled_clients}")
        self.strategy = strategy
        self.noise_multiplier = float(noise_multiplier)
        self.clipping_norm = float(clipping_norm)
        self.num_sampled_clients = num_sampled_clients
        self.delta = float(delta)
        self.rng = rng or SecretGenerator()
        self.releases = 0  # noisy gradients released so far (the accountant's count)
        self.last_norms: list[float] = []  # the clients' gradient norms before clipping, last round
        self._epsilon_cache: tuple[int, float] = (0, 0.0)

    # -- what the server loop reads on its strategy (delegated) ---------------------------
    round_offset = property(lambda self: self.strategy.round_offset,
                            lambda self, v: setattr(self.strategy, "round_offset", v))
    eval_every = property(lambda self: self.strategy.eval_every, lambda self, v: setattr(self.strategy, "eval_every", v))
    total_rounds = property(lambda self: self.strategy.total_rounds,
                            lambda self, v: setattr(self.strategy, "total_rounds", v))
    last_train_metrics = property(lambda self: self.strategy.last_train_metrics)
    last_eval_metrics = property(lambda self: self.strategy.last_eval_metrics)

    def summary(self) -> None:
        self.strategy.summary()

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        messages = list(self.strategy.configure_train(server_round, arrays, config, grid))
        require(len(messages) <= self.num_sampled_clients,
                f"{len(messages)} clients sampled, more than the {self.num_sampled_clients} the DP noise is calibrated for")
        return messages

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return self.strategy.aggregate_evaluate(server_round, replies)

    def noisy_mean(self, gradients: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """``(sum_c clip(g_c) + N(0, (z C)^2 I)) / n`` for the replies of one round."""
        clipped = []
        self.last_norms = []
        for g in gradients:
            c, norm = clip_gradient(g, self.clipping_norm)
            clipped.append(c)
            self.last_norms.append(norm)
        names = list(gradients[0])
        std = self.noise_multiplier * self.clipping_norm
        out = {}
        for n in names:
            total = sum(c[n].double() for c in clipped)
            noise = self.rng.normal(tuple(total.shape), dtype=torch.float64) * std
            out[n] = ((total + noise) / self.num_sampled_clients).float()
        return out

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        ok = [r for r in replies if not r.has_error() and r.content.array_records]
        if not ok:
            self.strategy.last_train_metrics = None
            return None, None  # nothing released this round: no privacy spent, W_t kept
        grads = [record_to_tensors(next(iter(r.content.array_records.values()))) for r in ok]
        metrics = self.strategy.train_metrics_aggr_fn([r.content for r in ok], self.strategy.weighted_by_key)
        self.strategy.last_train_metrics = metrics
        self.strategy.apply_gradient(self.noisy_mean(grads))
        self.releases += 1
        return self.strategy.arrays(), metrics

    def epsilon(self) -> float:
        """Client-level epsilon spent so far, at ``delta`` (cached per release count)."""
        if self._epsilon_cache[0] != self.releases:
            self._epsilon_cache = (self.releases, epsilon_spent(self.noise_multiplier, self.releases, self.delta))
        return self._epsilon_cache[1]

    def report(self) -> dict:
        return {"unit": "client-level (add/remove one client's data), no sampling amplification claimed",
                "clipping_norm": self.clipping_norm, "noise_multiplier": self.noise_multiplier,
                "num_sampled_clients": self.num_sampled_clients, "releases": self.releases, "delta": self.delta,
                "epsilon": self.epsilon(), "accountant": "dp-accounting PLD"}

    def state_dict(self) -> dict:
        return {"wrapped": self.strategy.state_dict(), "releases": self.releases, "noise_multiplier": self.noise_multiplier,
                "noise_state": self.rng.experiment_state()}  # None unless seeded (experiments)

    def load_state_dict(self, state: dict) -> None:
        require("releases" in state and state.get("noise_multiplier") == self.noise_multiplier,
                "the checkpoint was written with other DP settings (a different noise multiplier, or none); "
                "resume with the same --dp-* settings and --rounds")
        self.strategy.load_state_dict(state["wrapped"])
        self.releases = int(state["releases"])
        self.rng.restore_experiment_state(state.get("noise_state"))
