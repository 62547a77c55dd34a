"""Client-side DP-SGD: every message a client sends is (epsilon, delta)-DP for each example that client holds.

Each round, client ``c`` (``n_c`` examples) takes a Poisson sample of its own shard (every example independently
with probability ``q_c = min(1, B / n_c)``, ``B`` = ``--batch-size``), computes each example's gradient with
Opacus's ``GradSampleModule``, clips it to L2 norm ``C`` (``--client-dp-clip``), sums, adds Gaussian noise of
standard deviation ``z_c C`` and divides by the expected batch size ``q_c n_c`` (Opacus's ``DPOptimizer``). FedSGD
sends that noisy gradient (one DP-SGD step per round); FedAvg takes ``local_steps`` such steps (Adam) and sends the
weights. The reply's ``num-examples`` is the expected batch size (public), and no training loss is sent: the actual
sample size and the loss are functions of the data the noise does not cover.

Accounting (sample-level, per client): the client's releases are ``rounds x steps_per_round`` Poisson-subsampled
Gaussian steps at rate ``q_c`` with multiplier ``z_c``, worst case (the client takes part in every round; with
``--fraction-train < 1`` it takes part in fewer, and no amplification by client sampling is claimed). ``z_c`` is
calibrated before the run for the target ``--client-dp-epsilon`` and ``delta_c`` (``--client-dp-delta``, default
``1 / (10 n_c)``, refused above ``1 / n_c``) with :func:`privnlu.training.dp_sgd.calibrate` (Opacus's PRV
accountant); the record states each client's accounted epsilon. The guarantee holds against the server and any
eavesdropper on the wire, for every message and the global model (post-processing).

Per-example sensitivity needs each training row to depend on one example: TextHide mixing ``k > 1`` examples is
refused with client DP-SGD (``--scheme none``, or TextHide with ``k = 1``, whose one-time mask is data-independent).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..accounting import event_to_json, gaussian_event
from ..errors import PrivnluError, require
from ..training.dp_sgd import DPSGDConfig, EncoderHead, calibrate, check_private_ready
from ..training.dp_sgd import accounted_epsilon as dp_sgd_epsilon

ACCOUNTANT = "prv"


@dataclass(frozen=True)
class ClientPlan:
    """One client's DP-SGD plan over the whole run (public: computed from the settings and the shard size)."""

    client: int
    n: int
    sample_rate: float
    steps: int
    delta: float
    noise_multiplier: float
    target_epsilon: float
    clip: float

    @property
    def expected_batch(self) -> float:
        return self.sample_rate * self.n

    def epsilon(self) -> float:
        """The accountant's epsilon at ``delta`` after all ``steps`` (every round, worst case)."""
        return accounted_epsilon(self.noise_multiplier, self.sample_rate, self.steps, self.delta)

    def to_json(self) -> dict:
        return {"client": self.client, "n": self.n, "sample_rate": self.sample_rate, "steps": self.steps,
                "delta": self.delta, "noise_multiplier": self.noise_multiplier, "epsilon": self.epsilon()}


def steps_per_round(cfg) -> int:
    """DP-SGD steps one client takes per round: one (FedSGD) or ``local_steps`` (FedAvg)."""
    return 1 if cfg.algorithm == "fedsgd" else cfg.local_steps


def plan_client(cfg, client: int, n: int, *, noise_multiplier: float | None = None) -> ClientPlan:
    """Client ``client``'s plan for ``n`` examples: rate, steps, delta and the calibrated multiplier (or
    ``noise_multiplier``, for checks)."""
    dcfg = DPSGDConfig(epsilon=cfg.client_dp_epsilon, delta=cfg.client_dp_delta or None, clip=cfg.client_dp_clip,
                       accountant=ACCOUNTANT, epochs=1, batch_size=cfg.batch_size)
    delta = dcfg.delta_for(n)
    q = min(1.0, cfg.batch_size / n)
    steps = cfg.rounds * steps_per_round(cfg)
    z = noise_multiplier or calibrate(float(cfg.client_dp_epsilon), delta, q, steps, ACCOUNTANT)
    return ClientPlan(client, n, q, steps, delta, float(z), float(cfg.client_dp_epsilon), float(cfg.client_dp_clip))


@functools.lru_cache(maxsize=256)
def accounted_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """Epsilon of ``steps`` Poisson-subsampled Gaussian steps (Opacus's PRV accountant, as the calibration);
    remembered per process (about a second a call, and the record, the check and the ledger ask for the same)."""
    return dp_sgd_epsilon(gaussian_event(noise_multiplier, sample_rate, steps), delta, ACCOUNTANT)


def check_plan(plan: ClientPlan, rtol: float = 1e-6) -> float:
    """The plan's accounted epsilon; PrivnluError if it exceeds the target (an under-noised plan)."""
    eps = plan.epsilon()
    if not eps <= plan.target_epsilon * (1 + rtol):
        raise PrivnluError(f"client {plan.client}: noise multiplier {plan.noise_multiplier:.4g} gives epsilon "
                           f"{eps:.4g} > the target {plan.target_epsilon:g} over {plan.steps} steps")
    return eps


def shard_sizes(n_train: int, clients: int) -> list[int]:
    """Each client's number of training examples (the shards of :func:`.data.shard_indices`)."""
    return [n_train // clients + (1 if c < n_train % clients else 0) for c in range(clients)]


def client_dp_report(cfg, n_train: int) -> dict:
    """The run record's ``client_dp`` block: every client's plan, its accounted epsilon, and the guarantee."""
    plans = [plan_client(cfg, c, n) for c, n in enumerate(shard_sizes(n_train, cfg.clients))]
    clients = [p.to_json() for p in plans]
    for p, c in zip(plans, clients):
        check_plan(p)
        require(c["epsilon"] <= p.target_epsilon * (1 + 1e-6), "client DP-SGD: a client's epsilon exceeds the target")
    eps, delta = max(c["epsilon"] for c in clients), max(c["delta"] for c in clients)
    return {"method": "client-dp-sgd", "unit": "example", "target_epsilon": float(cfg.client_dp_epsilon),
            "epsilon": eps, "delta": delta, "clip": float(cfg.client_dp_clip), "accountant": ACCOUNTANT,
            "rounds": cfg.rounds, "steps_per_round": steps_per_round(cfg), "participation": "every round (worst case)",
            "clients": clients, "guarantee": guarantee_text(eps, delta, cfg.rounds, cfg.client_dp_clip)}


def guarantee_text(epsilon: float, delta: float, rounds: int, clip: float) -> str:
    """The one-sentence guarantee (its unit and what it covers)."""
    return (f"({epsilon:.4g}, {delta:g})-DP per example of each client's data (sample-level, worst client), for "
            f"every message a client sends over {rounds} rounds and for the global model: client-side DP-SGD "
            f"(Poisson sampling, per-example clipping to {clip:g}, Gaussian noise added on the client before "
            "sending, Opacus PRV accountant, each client counted in every round); it is not a client-level bound")


def _unreached(module: nn.Module, probe: tuple, params: list[nn.Parameter]) -> list[nn.Parameter]:
    """The parameters of ``params`` a forward pass on ``probe`` (a constant input, never data) does not reach."""
    if not params:
        return []
    was = module.training
    module.eval()
    try:
        out = module(*probe)
    finally:
        module.train(was)
    grads = torch.autograd.grad(out.float().sum(), params, allow_unused=True)
    return [p for p, g in zip(params, grads) if g is None]


def _per_example_loss(out: torch.Tensor, y: torch.Tensor, regression: bool) -> torch.Tensor:
    if regression:
        return (out[:, 0] - y.reshape(len(out), -1)[:, 0]) ** 2
    return F.cross_entropy(out, y) if y.dim() == 1 else -(y * F.log_softmax(out, dim=-1)).sum(-1)


class ClientDPSGD:
    """One client's DP-SGD for one round over its model (head, or encoder + head) and shard.

    ``inputs(idx)`` gives the module's inputs for shard rows ``idx``; ``empty`` a constant one-row input (never
    data) for an empty Poisson sample, which still takes its noisy step at weight 0. Parameters the loss never
    reaches (BERT's pooler under ``cls`` or ``mean`` pooling: a probe on ``empty`` finds them) are frozen for the
    round and get a zero gradient (a constant, as the non-private client sends): Opacus needs a per-example
    gradient for every parameter it trains."""

    def __init__(self, module: nn.Module, plan: ClientPlan, *, inputs, targets: torch.Tensor, empty: tuple,
                 regression: bool, words: tuple[int, int]) -> None:
        from opacus import GradSampleModule

        check_private_ready(module)
        self.plan, self.inputs, self.targets, self.empty, self.regression = plan, inputs, targets, empty, regression
        self.noise_gen, self.sample_gen = (torch.Generator().manual_seed(int(w)) for w in words)
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.unreached = _unreached(module, empty, self.params)
        for p in self.unreached:
            p.requires_grad_(False)
        self.trained = [p for p in self.params if p.requires_grad]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.gsm = GradSampleModule(module, batch_first=True, loss_reduction="sum")

    def close(self) -> None:
        """Remove Opacus's hooks and unfreeze the unreached parameters (the encoder is shared across rounds)."""
        self.gsm._close()
        for p in self.unreached:
            p.requires_grad_(True)

    def sample(self) -> torch.Tensor:
        """A Poisson sample of the shard: each row independently with probability ``q``."""
        keep = torch.rand(self.plan.n, generator=self.sample_gen) < self.plan.sample_rate
        return keep.nonzero().flatten()

    def optimizer(self, inner: torch.optim.Optimizer):
        from opacus.optimizers import DPOptimizer

        frozen = {id(p) for p in self.unreached}
        for g in inner.param_groups:
            g["params"] = [p for p in g["params"] if id(p) not in frozen]
        inner.param_groups[:] = [g for g in inner.param_groups if g["params"]]
        return DPOptimizer(inner, noise_multiplier=self.plan.noise_multiplier, max_grad_norm=self.plan.clip,
                           expected_batch_size=max(1, int(round(self.plan.expected_batch))), loss_reduction="mean",
                           generator=self.noise_gen)

    def _backward(self, opt) -> None:
        idx = self.sample()
        if len(idx):
            inputs, weight = self.inputs(idx), 1.0
            y = self.targets[idx]
        else:
            inputs, weight, y = self.empty, 0.0, self.targets[:1]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ff]ull backward hook")
            loss = _per_example_loss(self.gsm(*inputs), y, self.regression).sum() * weight
            opt.zero_grad(set_to_none=True)
            loss.backward()

    def noisy_gradient(self) -> list[torch.Tensor]:
        """FedSGD: one DP-SGD gradient ``(sum_i clip_C(g_i) + N(0, (zC)^2 I)) / (q n)`` for every trainable
        parameter (in ``module.parameters()`` order)."""
        opt = self.optimizer(torch.optim.SGD(self.trained, lr=0.0))
        self._backward(opt)
        opt.pre_step()
        frozen = {id(p) for p in self.unreached}
        out = [torch.zeros_like(p) if id(p) in frozen else p.grad.detach().clone() for p in self.params]
        opt.zero_grad(set_to_none=True)
        return out

    def local_steps(self, inner: torch.optim.Optimizer, steps: int) -> None:
        """FedAvg: ``steps`` DP-SGD steps with ``inner`` (Adam) on fresh Poisson samples."""
        opt = self.optimizer(inner)
        for _ in range(steps):
            self._backward(opt)
            opt.step()
        opt.zero_grad(set_to_none=True)


class ClientDPRound:
    """Client DP-SGD for one round of a :class:`~.client.TextHideClient`: the module it trains is the head (frozen
    mode) or the encoder and head as :class:`~privnlu.training.dp_sgd.EncoderHead` (joint mode); TextHide with
    ``k = 1`` masks each row before the head (frozen mode)."""

    def __init__(self, client, cfg, words) -> None:
        model, data = client.model, client.data
        self.client, self.cfg = client, cfg
        self.plan = plan_client(cfg, client.partition, len(data))
        self.names = {id(p): n for n, p in model.named_parameters().items()}  # wire names
        self.joint = model.encoder is not None
        if not self.joint:
            module: nn.Module = model.head
            hider = client.hider

            def inputs(idx: torch.Tensor) -> tuple:
                x = data.represent(idx)
                return (hider.mask_only(x) if hider is not None else x,)

            empty: tuple = (torch.zeros(1, client.encoder.dim),)
        else:
            if client.hider is not None:
                raise PrivnluError("client DP-SGD in joint mode needs --scheme none (TextHide masks the encoder "
                                   "output, which the per-example model does not)")
            module = EncoderHead(model.encoder, model.head)
            tok = data.tokens
            assert tok is not None

            def inputs(idx: torch.Tensor) -> tuple:
                batch = {k: v[idx] for k, v in tok.items()}
                width = int(batch["attention_mask"].sum(1).max())
                return tuple(batch[k][:, :width] if k in batch else None
                             for k in ("input_ids", "attention_mask", "token_type_ids"))

            pad_id = int(getattr(model.encoder.tokenizer, "pad_token_id", 0) or 0)
            empty = (torch.full((1, 2), pad_id, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), None)
        self.module = module
        self.inputs, self.empty = inputs, empty
        self.words = tuple(int(w) for w in words)

    def _run(self, fn):
        for mod in self.client.model.modules().values():
            mod.train()
        if self.joint:
            self.module.per_example_embeddings()
        dp = ClientDPSGD(self.module, self.plan, inputs=self.inputs, targets=self.client.data.targets,
                         empty=self.empty, regression=self.client.model.task.is_regression, words=self.words)
        try:
            return fn(dp)
        finally:
            dp.close()
            if self.joint:
                self.module.remove_hooks()

    def gradient(self) -> tuple[dict[str, torch.Tensor], float, int]:
        """FedSGD: the noisy gradient by wire name, no loss (nan), and the expected batch size (public)."""
        named = self._run(lambda dp: {self.names[id(p)]: g for p, g in zip(dp.params, dp.noisy_gradient())})
        require(set(named) == set(self.names.values()),
                "client DP-SGD: the trained module does not match the model's parameters")
        return named, float("nan"), int(round(self.plan.expected_batch))

    def local_steps(self) -> tuple[float, int]:
        """FedAvg: ``local_steps`` DP-SGD steps (Adam); no loss (nan) and the expected number of examples."""
        cfg, model = self.cfg, self.client.model
        groups = [{"params": [p for p in model.head.parameters() if p.requires_grad], "lr": cfg.lr}]
        if model.encoder is not None:
            groups.append({"params": [p for p in model.encoder.parameters() if p.requires_grad],
                           "lr": cfg.encoder_lr})
        self._run(lambda dp: dp.local_steps(torch.optim.Adam(groups), cfg.local_steps))
        return float("nan"), int(round(self.plan.expected_batch * cfg.local_steps))


def replay_poisson_sample(cfg, n: int, words) -> torch.Tensor:
    """AUDITOR ONLY: the shard rows :meth:`ClientDPSGD.sample` draws first (the FedSGD round's sample) for the
    round's secret ``words``, at ``q = min(1, B / n)``; seeded experiments replay it, never an attack."""
    gen = torch.Generator().manual_seed(int(tuple(words)[1]))
    return (torch.rand(n, generator=gen) < min(1.0, cfg.batch_size / n)).nonzero().flatten()


def client_releases(cfg, n_train: int, output: str) -> list:
    """The privacy-ledger record of each client's shard for a run of ``cfg``: with client DP-SGD, ``steps``
    Poisson-subsampled Gaussian steps at ``(q_c, z_c)`` with the accounted epsilon; with DP-FedSGD, ``rounds``
    Gaussians at ``z`` (a client-level bound holds for each of its examples); else no formal guarantee."""
    from ..schemes.ledger import NO_GUARANTEE, Release

    name = f"{cfg.task}/train"
    if cfg.client_dp_epsilon:
        rep = client_dp_report(cfg, n_train)
        return [Release("federated", name, "dp", "client-dp-sgd", c["epsilon"], c["delta"],
                        [event_to_json(gaussian_event(c["noise_multiplier"], c["sample_rate"], c["steps"]))],
                        meaning=f"client {c['client']}: ({c['epsilon']:.4g}, {c['delta']:.2g})-DP per example for "
                                f"every message and the global model (client DP-SGD, {c['steps']} Poisson-sampled "
                                f"steps at q = {c['sample_rate']:.4g}, noise multiplier {c['noise_multiplier']:.4g})",
                        output=output) for c in rep["clients"]]
    if cfg.dp_clip:
        from ..mechanisms.dp_fedsgd import epsilon_spent, rounds_event

        z = cfg.dp_noise_multiplier
        eps = epsilon_spent(z, cfg.rounds, cfg.dp_delta)
        rel = Release("federated", name, "dp", "dp-fedsgd", eps, cfg.dp_delta,
                      [event_to_json(rounds_event(z, cfg.rounds))],
                      meaning=f"({eps:.4g}, {cfg.dp_delta:g})-DP per client, hence per example, for the global model "
                              f"(DP-FedSGD, {cfg.rounds} rounds at noise multiplier {z:.4g}); not for the messages",
                      output=output)
    else:
        rel = Release("federated", name, "none", cfg.privacy.label, meaning=NO_GUARANTEE, output=output)
    return [rel] * cfg.clients


def begin_releases(cfg, ledger: str, output: str) -> list:
    """Check each client's shard against the owner's ledger budget and record it as pending (one release per
    client), before any work; all or none (an over-budget shard aborts the ones already begun)."""
    from ..schemes.ledger import Ledger, dataset_hashes
    from .data import load_train, shard_indices

    train = load_train(cfg)
    book, begun = Ledger.open(ledger), []
    try:
        for c, rel in enumerate(client_releases(cfg, len(train), output)):
            shard = train.subset(shard_indices(len(train), cfg.clients, c).tolist())
            begun.append(book.begin(rel, dataset_hashes(shard)))
    except BaseException:
        for p in begun:
            p.abort()
        raise
    return begun
