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
from dataclasses import MISSING, asdict, dataclass, fields

from ..errors import PrivnluError, require, require_choice
from ..options import OPTIONS
from ..params import INF, POS_INT, Option, Range, check_k, m_label, param, parse_m
from ..schemes import Scheme, canonical, create, get, names

ALGORITHMS = ("fedsgd", "fedavg")
SERVER_OPTIMIZERS = ("adam", "sgd")
MODES = ("frozen", "joint")


@dataclass(frozen=True)
class FederatedConfig:
    """Everything that defines a federated run (all fields are Flower config scalars); the settings the command line
    offers are declared on their fields (:func:`privnlu.params.param`)."""

    task: str = param(OPTIONS["task"].but(required=True), default=MISSING)
    clients: int = param(Option("clients", "--clients", "number of clients", int, default=4, range=POS_INT,
                                group="federation"))
    rounds: int = param(Option("rounds", "--rounds", "federated rounds", int, default=50, range=POS_INT,
                               group="federation"))
    m: str = "256"  # the scheme's (privnlu.schemes), split over the clients
    k: int = 4
    pool_sizes: str = param(Option("pool_sizes", "--pool-sizes", "explicit per-client pool sizes, comma-separated, "
                                   "summing to m", default="", group="scheme",
                                   range=Range(lo=1, integer=True, items=True, empty_ok=True, note="empty = an even "
                                                                                                   "split")))
    scheme: str = "texthide"  # or "none" (plain FedSGD/FedAvg baseline)
    algorithm: str = param(Option("algorithm", "--algorithm", "fedsgd: clients send one gradient per round "
                                  "(Algorithm 2); fedavg: weights after local steps", default="fedsgd",
                                  choices=ALGORITHMS, group="federation"))
    local_steps: int = param(Option("local_steps", "--local-steps", "client steps per round with fedavg", int,
                                    default=1, range=POS_INT, group="federation"))
    batch_size: int = param(OPTIONS["batch_size"].but(help="hidden batch per client and step"))
    lr: float = param(OPTIONS["lr"].but(help="server (fedsgd) or client (fedavg) learning rate"))
    server_optimizer: str = param(Option("server_optimizer", "--server-optimizer", "server optimizer (fedsgd)",
                                         default="adam", choices=SERVER_OPTIMIZERS, group="training"))
    mode: str = param(OPTIONS["mode"])
    encoder_lr: float = param(OPTIONS["encoder_lr"])
    train_embeddings: bool = param(Option(
        "train_embeddings", "--train-embeddings", "joint mode: also train the word/position/token-type embedding "
        "tables. UNSAFE: their gradient rows are non-zero exactly at the batch's token ids, so every client sends its "
        "words to the server (default: the tables stay frozen on the clients)", kind="flag", group="training"))
    model: str = param(OPTIONS["model"], default="")  # "" = packaged MiniLM
    pooling: str = param(OPTIONS["pooling"].but(default="cls"))
    max_length: int = param(OPTIONS["max_length"])
    hidden: str = ""  # "" = (d, d, d)
    dropout: float = param(OPTIONS["dropout"])
    abs_input: bool = param(OPTIONS["abs_input"])
    train_limit: int = param(OPTIONS["train_limit"], default=0)  # 0 = all
    dev_limit: int = param(OPTIONS["dev_limit"], default=0)
    data_dir: str = param(OPTIONS["data_dir"], default="")
    cache_dir: str = param(OPTIONS["cache_dir"], default="")
    fraction_train: float = param(Option("fraction_train", "--fraction-train", "fraction of clients sampled each "
                                         "round", float, default=1.0, range=Range(lo=0, hi=1, lo_open=True),
                                         group="federation"))
    min_clients: int = param(Option("min_clients", "--min-clients", "Flower's minimum available clients before a "
                                    "round starts", int, default=0, range=Range(lo=0, integer=True, note="0 = all "
                                                                                                         "clients"),
                                    group="federation"))
    eval_every: int = param(Option("eval_every", "--eval-every", "evaluate the global model every N rounds", int,
                                   default=1, range=POS_INT, group="training"))
    eval_mask: str = param(OPTIONS["eval_mask"].but(help="pool: clients also score the global model on their dev "
                                                         "shard masked with their own pool (federated evaluation); "
                                                         "none: only the server's unmasked dev score"))
    checkpoint_every: int = param(Option("checkpoint_every", "--checkpoint-every", "checkpoint every N rounds (always "
                                         "at the end)", int, default=0, group="training",
                                         range=Range(lo=0, integer=True, note="0 = only at the end")))
    seed: int = -1  # -1 = secure randomness; >= 0 EXPERIMENTS ONLY
    dp_clip: float = param(Option("dp_clip", "--dp-clip", "clip each client's gradient to L2 norm C on the server and "
                                  "add Gaussian noise: client-level DP-FedSGD (fedsgd only)", float, default=0.0,
                                  metavar="C", range=Range(lo=0, hi=1e12, note="0 = no DP"), group="client-level DP"))
    dp_noise: float = param(Option("dp_noise", "--dp-noise-multiplier", "noise std = Z * C on the sum", float,
                                   default=0.0, metavar="Z", range=Range(lo=0, hi=1e6, note="0 = off"),
                                   group="client-level DP"))
    dp_epsilon: float = param(Option("dp_epsilon", "--dp-epsilon", "instead of --dp-noise-multiplier: calibrate Z so "
                                     "that all --rounds are (epsilon, delta)-DP", float, default=0.0,
                                     range=Range(lo=0, hi=1000.0, note="0 = use --dp-noise-multiplier"),
                                     group="client-level DP"))
    dp_delta: float = param(OPTIONS["delta"].but(dest="dp_delta", default=1e-5, help="delta of the client-level DP "
                                                                                    "guarantee",
                                                 group="client-level DP"))
    secagg: bool = param(Option("secagg", "--secagg", "secure aggregation with Flower's SecAgg+ (fedsgd, 2-255 "
                                "clients, every backend and --deploy; on by default in --mode joint): the server sees "
                                "only the sum of the clients' gradients, and a client that drops out mid-round is "
                                "unmasked from the others' shares",
                                kind="flag", group="client-side protection"))
    unprotected: bool = param(Option(
        "unprotected", "--unprotected", "joint mode without secure aggregation. UNSAFE: the server and any "
        "eavesdropper get each client's encoder gradient, from which the span attack (`privnlu attack gradient "
        "--method span`) recovers its sentences (default: SecAgg+ with fedsgd and 2 or more clients)", kind="flag",
        group="client-side protection"))
    client_dp_epsilon: float = param(Option(
        "client_dp_epsilon", "--client-dp-epsilon", "client-side DP-SGD: each client trains with Poisson sampling, "
        "per-example clipping and Gaussian noise calibrated so that everything it sends over all --rounds is "
        "(epsilon, delta)-DP for each of its examples (worst case: it takes part in every round)", float, default=0.0,
        range=Range(lo=0, hi=1000.0, note="0 = off"), group="sample-level DP (client-side DP-SGD)"))
    client_dp_delta: float = param(Option(
        "client_dp_delta", "--client-dp-delta", "delta of each client's guarantee", float, default=0.0,
        range=Range(lo=0, hi=1, hi_open=True, note="0 = 1/(10 n_c), n_c the client's examples"),
        group="sample-level DP (client-side DP-SGD)"))
    client_dp_clip: float = param(Option(
        "client_dp_clip", "--client-dp-clip", "per-example gradient clipping norm C of client DP-SGD", float,
        default=1.0, metavar="C", range=Range(lo=0, hi=1e12, lo_open=True),
        group="sample-level DP (client-side DP-SGD)"))
    # whole-update noise without accounting: a measurement knob for the attack recipes, not a command-line option
    # (privnlu federated refuses --local-noise and points to --client-dp-epsilon)
    local_clip: float = 0.0
    local_noise: float = 0.0

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
        if not self.privacy.private and (self.m != "0" or self.k != 1):
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
            raise PrivnluError("--train-limit and --dev-limit must be >= 1 (unset: every example)")
        if not 0 <= self.dropout < 1:
            raise PrivnluError(f"dropout must be in [0, 1), not {self.dropout}")
        hidden_sizes(self.hidden)
        self._check_dp()
        self._check_client_side()
        self._check_client_dp()
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
        from ..mechanisms.dp_fedsgd import check_dp_settings

        check_dp_settings(clipping_norm=self.dp_clip, noise_multiplier=self.dp_noise_multiplier, delta=self.dp_delta)

    def _check_client_side(self) -> None:
        if (self.secagg or self.local_noise or self.local_clip) and self.algorithm != "fedsgd":
            raise PrivnluError("--secagg (and local noise) apply to --algorithm fedsgd (clients send gradients)")
        if self.unprotected and (self.secagg or self.mode != "joint"):
            raise PrivnluError("--unprotected turns off the secure aggregation of --mode joint: drop --secagg or "
                               "--unprotected" if self.secagg else "--unprotected applies to --mode joint only")
        if self.secagg and self.dp_clip:
            raise PrivnluError("--dp-clip clips each client's gradient on the server, which --secagg hides from it; "
                               "use --client-dp-epsilon (client-side DP-SGD) with --secagg")
        if bool(self.local_noise) != bool(self.local_clip):
            raise PrivnluError("--local-noise Z needs --local-clip C (the noise std is Z * C), and vice versa")
        for name in ("local_noise", "local_clip"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise PrivnluError(f"{name.replace('_', ' ')} must be >= 0, not {v}")

    def _check_client_dp(self) -> None:
        """One-line errors for client DP-SGD settings (:mod:`.client_dp`), before anything runs."""
        for name in ("client_dp_epsilon", "client_dp_delta", "client_dp_clip"):
            v = getattr(self, name)
            require(math.isfinite(v) and v >= 0, f"--{name.replace('_', '-')} must be >= 0, not {v}")
        if not self.client_dp_epsilon:
            if self.client_dp_delta:
                raise PrivnluError("--client-dp-delta needs --client-dp-epsilon (client-side DP-SGD)")
            return
        require(self.client_dp_clip > 0, f"--client-dp-clip must be > 0, not {self.client_dp_clip}")
        require(self.client_dp_delta < 1, f"--client-dp-delta must be in (0, 1), not {self.client_dp_delta}")
        if self.privacy.private and self.k != 1:
            raise PrivnluError(f"client DP-SGD bounds each example's gradient, but TextHide with k = {self.k} mixes k "
                               "examples into each row: use --scheme none or k = 1")
        if self.local_noise:
            raise PrivnluError("client DP-SGD already noises every message; drop the local-noise knob")

    @property
    def privacy(self) -> Scheme:
        """The run's privacy scheme with its parameters (from the registry)."""
        return create(self.scheme, **({"m": self.m, "k": self.k} if get(self.scheme).private else {}))

    @property
    def label(self) -> str:
        """The run's name: task, algorithm, the pool point (or ``baseline``) and the number of clients."""
        point = f"m{self.m}-k{self.k}" if self.privacy.private else "baseline"
        cdp = f"-cdp{self.client_dp_epsilon:g}" if self.client_dp_epsilon else ""
        return f"{self.task}-{self.algorithm}-{point}-c{self.clients}{cdp}"

    @property
    def dp_noise_multiplier(self) -> float:
        """``z``: as given, or calibrated so that all ``rounds`` releases are (dp_epsilon, dp_delta)-DP."""
        if self.dp_noise or not self.dp_epsilon:
            return self.dp_noise
        from ..mechanisms.dp_fedsgd import noise_multiplier_for

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
