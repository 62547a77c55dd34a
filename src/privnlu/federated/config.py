"""Settings of a federated TextHide run, as a flat record Flower can carry.

Flower passes settings to a ServerApp/ClientApp as a ``run_config`` (scalars
only), both in the in-process simulation and in a real deployment
(``[tool.flwr.app.config]`` of the app's ``pyproject.toml``). A
:class:`FederatedConfig` converts to and from that flat dict, so both ways of
running read the same settings.

The global pool size ``m`` is split over the clients: client ``c`` draws its own
pool of ``m_c`` masks, ``sum_c m_c = m`` (an even split by default, or explicit
``pool_sizes``). ``m = 0`` (no mask) and ``m = inf`` (a fresh mask per example)
apply to every client. Pool sizes are public parameters, as in the paper; the
masks are not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from ..errors import PrivnluError, require_choice
from ..mechanisms.texthide import INF, check_k, m_label, parse_m
from ..schemes import Scheme, canonical, create, get, names

ALGORITHMS = ("fedsgd", "fedavg")
SERVER_OPTIMIZERS = ("adam", "sgd")
MODES = ("frozen", "joint")


@dataclass(frozen=True)
class FederatedConfig:
    """Everything that defines a federated run (all fields are Flower config scalars)."""

    task: str
    clients: int = 4
    rounds: int = 50
    m: str = "256"
    k: int = 4
    pool_sizes: str = ""  # "" = even split of m; else comma-separated sizes summing to m
    scheme: str = "texthide"  # or "none" (plain FedSGD/FedAvg baseline)
    algorithm: str = "fedsgd"
    local_steps: int = 1  # fedavg only
    batch_size: int = 64  # per client and step
    lr: float = 1e-3  # server optimizer (fedsgd) or client optimizer (fedavg)
    server_optimizer: str = "adam"
    mode: str = "frozen"
    encoder_lr: float = 2e-5
    # joint mode: also train the token/position embedding tables. Their gradient rows are non-zero exactly at the
    # batch's token ids, so this sends every client's words to the server (issue 12); off by default
    train_embeddings: bool = False
    model: str = ""  # "" = packaged MiniLM
    pooling: str = "cls"
    max_length: int = 128
    hidden: str = ""  # "" = (d, d, d)
    dropout: float = 0.1
    abs_input: bool = False  # the head sees |x| (mask-invariant: needs no key; see privnlu train --abs-input)
    train_limit: int = 0  # 0 = all
    dev_limit: int = 0
    data_dir: str = ""
    cache_dir: str = ""
    fraction_train: float = 1.0
    min_clients: int = 0  # 0 = all clients must be available and answer
    eval_every: int = 1
    eval_mask: str = "pool"  # clients also score the model on their dev shard masked with their own pool
    checkpoint_every: int = 0  # 0 = only at the end
    seed: int = -1  # -1 = secure randomness; >= 0 EXPERIMENTS ONLY
    dp_clip: float = 0.0  # > 0: client-level DP-FedSGD (see federated/dp.py), clip each client's gradient to this L2 norm
    dp_noise: float = 0.0  # the noise multiplier z (or give dp_epsilon to calibrate it for the run's rounds)
    dp_epsilon: float = 0.0
    dp_delta: float = 1e-5
    secagg: bool = False  # in-process pairwise-masking secure aggregation (federated/secagg.py): the server sees the sum
    local_clip: float = 0.0  # > 0 with local_noise: each client clips its gradient to this L2 norm ...
    local_noise: float = 0.0  # ... and adds N(0, (local_noise * local_clip)^2) to every coordinate it sends

    def __post_init__(self) -> None:
        object.__setattr__(self, "m", m_label(parse_m(self.m)))
        if self.clients < 1:
            raise PrivnluError(f"--clients must be >= 1, not {self.clients}")
        if self.rounds < 1:
            raise PrivnluError(f"--rounds must be >= 1, not {self.rounds}")
        object.__setattr__(self, "scheme", canonical(self.scheme))
        if not get(self.scheme).federated:
            raise PrivnluError(f"privnlu federated runs the schemes {', '.join(n for n in names() if get(n).federated)}, "
                               f"not {self.scheme}")
        if self.privacy.release == "none" and (self.m != "0" or self.k != 1):
            raise PrivnluError(f"scheme '{self.scheme}' takes no m or k")
        check_k(self.k, self.batch_size)
        require_choice("algorithm", self.algorithm, ALGORITHMS)
        if self.server_optimizer not in SERVER_OPTIMIZERS:
            raise PrivnluError(f"unknown server optimizer '{self.server_optimizer}'; choose adam or sgd")
        if self.mode not in MODES:
            raise PrivnluError(f"unknown mode '{self.mode}'; choose frozen or joint")
        if self.train_embeddings and self.mode != "joint":
            raise PrivnluError("--train-embeddings applies to --mode joint only (frozen mode trains no encoder weight)")
        if self.local_steps < 1:
            raise PrivnluError(f"--local-steps must be >= 1, not {self.local_steps}")
        if self.algorithm == "fedsgd" and self.local_steps != 1:
            raise PrivnluError("--local-steps applies to --algorithm fedavg only (FedSGD sends one gradient per round)")
        for name in ("lr", "encoder_lr"):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise PrivnluError(f"the {name.replace('_', ' ')} must be positive, not {v}")
        if not 0 < self.fraction_train <= 1:
            raise PrivnluError(f"--fraction-train must be in (0, 1], not {self.fraction_train}")
        if not 0 <= self.min_clients <= self.clients:
            raise PrivnluError(f"--min-clients must be between 1 and --clients ({self.clients}) (0 = all), not {self.min_clients}")
        if self.eval_mask not in ("none", "pool"):
            raise PrivnluError(f"--eval-mask must be none or pool, not '{self.eval_mask}'")
        if self.eval_every < 0 or self.checkpoint_every < 0:
            raise PrivnluError("--eval-every and --checkpoint-every must be >= 0")
        if self.train_limit < 0 or self.dev_limit < 0:
            raise PrivnluError("limits must be >= 1")
        if not 0 <= self.dropout < 1:
            raise PrivnluError(f"dropout must be in [0, 1), not {self.dropout}")
        hidden_sizes(self.hidden)
        self._check_dp()
        self._check_client_side()
        client_pool_sizes(self.m, self.clients, self.pool_sizes)

    def _check_dp(self) -> None:
        if not self.dp_clip:
            if self.dp_noise or self.dp_epsilon:
                raise PrivnluError("--dp-noise-multiplier / --dp-epsilon need --dp-clip (the clipping norm C)")
            return
        if self.algorithm != "fedsgd":
            raise PrivnluError("gradient-space DP (--dp-clip) needs --algorithm fedsgd (clients send gradients)")
        if bool(self.dp_noise) == bool(self.dp_epsilon):
            raise PrivnluError("with --dp-clip give exactly one of --dp-noise-multiplier or --dp-epsilon")
        from .dp_accounting import check_dp_settings

        check_dp_settings(clipping_norm=self.dp_clip, noise_multiplier=self.dp_noise_multiplier, delta=self.dp_delta)

    def _check_client_side(self) -> None:
        if (self.secagg or self.local_noise or self.local_clip) and self.algorithm != "fedsgd":
            raise PrivnluError("--secagg and --local-noise apply to --algorithm fedsgd (clients send gradients)")
        if self.secagg and self.dp_clip:
            raise PrivnluError("--dp-clip clips each client's gradient on the server, which --secagg hides from it; "
                               "use --local-noise (client-side) with --secagg")
        if bool(self.local_noise) != bool(self.local_clip):
            raise PrivnluError("--local-noise Z needs --local-clip C (the noise std is Z * C), and vice versa")
        for name in ("local_noise", "local_clip"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise PrivnluError(f"--{name.replace('_', '-')} must be >= 0, not {v}")

    @property
    def privacy(self) -> Scheme:
        """The run's privacy scheme with its parameters (from the registry)."""
        return create(self.scheme, **({} if get(self.scheme).release == "none" else {"m": self.m, "k": self.k}))

    @property
    def label(self) -> str:
        """The run's name: task, algorithm, the pool point (or ``baseline``) and the number of clients."""
        point = "baseline" if self.privacy.release == "none" else f"m{self.m}-k{self.k}"
        return f"{self.task}-{self.algorithm}-{point}-c{self.clients}"

    @property
    def dp_noise_multiplier(self) -> float:
        """``z``: as given, or calibrated so that all ``rounds`` releases are (dp_epsilon, dp_delta)-DP."""
        if self.dp_noise or not self.dp_epsilon:
            return self.dp_noise
        from .dp_accounting import noise_multiplier_for

        return noise_multiplier_for(self.dp_epsilon, self.dp_delta, self.rounds)

    @property
    def sampled_clients(self) -> int:
        """Clients Flower's FedAvg sampling asks each round: ``max(int(clients * fraction_train), 1)``."""
        return max(int(self.clients * self.fraction_train), 1)

    # -- Flower run_config round trip --------------------------------------
    def to_run_config(self) -> dict[str, str | int | float | bool]:
        return asdict(self)

    @classmethod
    def from_run_config(cls, run_config: dict) -> "FederatedConfig":
        names = {f.name: f for f in fields(cls)}
        kwargs = {}
        for key, value in run_config.items():
            key = key.replace("-", "_")
            if key in names:
                kwargs[key] = value
        if "task" not in kwargs:
            raise PrivnluError("the Flower run config has no 'task'; set it in [tool.flwr.app.config]")
        # TOML/CLI overrides may type 256 as int; the dataclass wants strings for m and pool sizes
        for key in ("m", "pool_sizes", "model", "hidden", "data_dir", "cache_dir"):
            if key in kwargs:
                kwargs[key] = str(kwargs[key])
        return cls(**kwargs)

    @property
    def min_available(self) -> int:
        return self.min_clients or self.clients

    @property
    def experiment_seed(self) -> int | None:
        return None if self.seed < 0 else self.seed


def hidden_sizes(text: str) -> tuple[int, ...] | None:
    if not str(text).strip():
        return None
    try:
        sizes = tuple(int(x) for x in str(text).split(",") if x.strip())
    except ValueError:
        raise PrivnluError(f"hidden sizes must be comma-separated integers, not '{text}'") from None
    if any(s < 1 for s in sizes):
        raise PrivnluError(f"hidden sizes must be >= 1, not '{text}'")
    return sizes


def client_pool_sizes(m: str | int | float, clients: int, pool_sizes: str = "") -> list[float]:
    """The pool size ``m_c`` of each client, with ``sum_c m_c = m``.

    ``m`` in {0, inf} gives every client the same (no pool / fresh masks). A
    finite ``m`` is split evenly unless ``pool_sizes`` lists the sizes; every
    client needs at least one mask.
    """
    mv = parse_m(m)
    if mv == 0 or mv == INF:
        if str(pool_sizes).strip():
            raise PrivnluError(f"--pool-sizes needs a finite m >= 1, not m = {m_label(mv)}")
        return [mv] * clients
    mv = int(mv)
    if str(pool_sizes).strip():
        try:
            sizes = [int(x) for x in str(pool_sizes).split(",") if x.strip()]
        except ValueError:
            raise PrivnluError(f"--pool-sizes must be comma-separated integers, not '{pool_sizes}'") from None
        if len(sizes) != clients:
            raise PrivnluError(f"--pool-sizes lists {len(sizes)} sizes for {clients} clients")
        if any(s < 1 for s in sizes):
            raise PrivnluError(f"every client needs a pool of at least 1 mask, not {sizes}")
        if sum(sizes) != mv:
            raise PrivnluError(f"--pool-sizes {pool_sizes} sum to {sum(sizes)}, not m = {mv}")
        return list(sizes)
    if mv % clients:
        raise PrivnluError(f"m = {mv} is not divisible by {clients} clients; choose m divisible by the number of "
                           f"clients or pass --pool-sizes (comma-separated, summing to {mv})")
    return [mv // clients] * clients
