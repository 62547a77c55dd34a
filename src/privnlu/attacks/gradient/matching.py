"""Gradient matching (DLG, Zhu et al. 2019) against TextHide: TextHide's Algorithm 3.

**Threat model.** An eavesdropper sees one client's gradient for one round,
``g = grad_W L(f_W(x~), y~)``, and the current model ``f_W`` (the MLP head).
As in the paper's easier setting it is given the label ``y~``. It never sees
the client's mask pool, mixing partners or coefficients:
:class:`GradientMatchingAttack` is built from the model alone and :meth:`~GradientMatchingAttack.run`
takes only the observed gradient and the label.

**Attack.** Optimise a dummy input ``x'`` and, against TextHide, a dummy mask
``s'`` relaxed to real values, so that the dummy gradient matches::

    min_{x', s'}  sum_W || grad_W L(f_W(s' o x'), y~) - g ||^2

with L-BFGS (learning rate 1, history 100, 20 iterations per step, 1,200
iterations in all). Without TextHide the dummy is ``f_W(x')``.

**Success** (scored outside the attacker by :func:`score`): the MSE between
``x'`` and the true input is at most 0.001. With ``k >= 2`` the hidden input
mixes ``k`` private representations; we count success if ``x'`` matches *any*
of them (the attacker-friendly reading).

**Victims** (``Trial.victim``):

* ``"hidden"`` (default; the paper's architecture, Appendix C.1): the attacked variable is the *input*
  ``x`` (a MiniLM sentence representation, 384-d), which passes through a non-linear layer and a
  hidden layer of width ``d``, ``h(x) = sigmoid(W2 sigmoid(W1 x + b1) + b2)``; TextHide mixes and masks
  ``h`` and the head ``W3`` classifies it. The attacker matches the gradients of *all* layers. This
  mirrors the paper's LeNet-5 (its last layer replaced by an MLP with hidden width ``d_m = d``, the
  mask applied at that hidden layer), with a fully connected body instead of LeNet's convolutions and
  text representations instead of CIFAR-10 images. Sigmoid activations as in DLG's LeNet (twice
  differentiable).
* ``"input"`` (privnlu's earlier setting): the MiniLM representation projected to ``d`` by a fixed random
  matrix is masked directly and fed to privnlu's ReLU MLP head. There only ``sigma o x`` can ever be
  identified from the gradient, so at ``k = 1`` recovering ``x`` needs the mask to be guessed.

The paper's Figure 3 ties success to matching the mask: each row records ``mask_mse`` (the MSE between
the relaxed mask ``s'`` and the true ``sigma``) and ``mask_matched`` (``mask_mse <= 0.001``), and the
curve of (iterations, gradient distance, input MSE, mask MSE) after every L-BFGS step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ...errors import PrivnluError
from ...training import task_loss
from ..threat import Attack, Grant


@dataclass(frozen=True)
class GradientMatchingConfig:
    """L-BFGS settings of Algorithm 3 and the success threshold."""

    iterations: int = 1200
    max_iter: int = 20  # L-BFGS iterations per optimizer step
    history: int = 100
    lr: float = 1.0
    success_mse: float = 1e-3
    tolerance: float = 1e-12  # stop once the gradient distance is this small
    stop_at_fixed_point: bool = True  # stop once L-BFGS no longer moves (x', s') at all: same result, less time
    seed: int = 0  # the attacker's own initialisation (not a defender secret)

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.max_iter < 1 or self.history < 1:
            raise PrivnluError("iterations, max_iter and history must be >= 1")
        if not self.lr > 0:
            raise PrivnluError(f"the L-BFGS learning rate must be positive, not {self.lr}")


@dataclass
class AttackOutput:
    """What the attacker ends with: its input estimate (and relaxed mask), and how well it matched."""

    recovered: torch.Tensor  # (d,)
    mask: torch.Tensor | None  # (d,) real-valued, against TextHide
    grad_distance: float
    iterations: int
    seconds: float


def victim_gradient(head: nn.Module, x_hidden: torch.Tensor, y_hidden: torch.Tensor, *, regression: bool = False
                    ) -> dict[str, torch.Tensor]:
    """The gradient a client shares for one (hidden) batch: ``grad_W L(f_W(x~), y~)``."""
    params = dict((n, p) for n, p in head.named_parameters() if p.requires_grad)
    loss = task_loss(head(x_hidden), y_hidden, regression=regression)
    return dict(zip(params, torch.autograd.grad(loss, list(params.values()))))


class HiddenMaskVictim(nn.Module):
    """The paper's victim (TextHide Appendix C.1), text version: input -> non-linear layer -> hidden layer of
    width ``d`` (where TextHide mixes and masks) -> head.

    ``represent(x) = sigmoid(W2 sigmoid(W1 x + b1) + b2)`` (width ``dim``); ``forward(x, mask)`` is
    ``W3 (mask o represent(x)) + b3``. ``logits_of_hidden`` applies the head to an already mixed and masked
    hidden batch (the client's side).
    """

    def __init__(self, in_dim: int, dim: int, num_labels: int, hidden: int = 256) -> None:
        super().__init__()
        self.in_dim, self.mask_dim = in_dim, dim
        self.body = nn.Sequential(nn.Linear(in_dim, hidden), nn.Sigmoid(), nn.Linear(hidden, dim), nn.Sigmoid())
        self.head = nn.Linear(dim, num_labels)

    def represent(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def logits_of_hidden(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(h)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.body(x)
        return self.head(h * mask if mask is not None else h)


def _logits(model: nn.Module, x: torch.Tensor, s: torch.Tensor | None) -> torch.Tensor:
    """The dummy forward pass: the mask inside the hidden-layer victim, on the input of a plain head."""
    if isinstance(model, HiddenMaskVictim):
        return model(x, s)
    return model(x * s if s is not None else x)


def analytic_input(gradient: dict[str, torch.Tensor], weight: str, bias: str) -> torch.Tensor | None:
    """Closed-form input from a first fully connected layer's gradient (batch size 1; Phong et al. 2017):
    ``dL/dW1 = delta x^T`` and ``dL/db1 = delta``, so ``x = (dL/dW1)[i] / (dL/db1)[i]`` for any ``i`` with
    ``delta_i != 0`` (the largest ``|delta_i|`` is used). No mask after that layer changes this."""
    gw, gb = gradient[weight], gradient[bias]
    i = int(gb.abs().argmax())
    return None if float(gb[i]) == 0.0 else gw[i] / gb[i]


class GradientMatchingAttack(Attack):
    """DLG with a relaxed dummy mask (TextHide Algorithm 3). Holds the model, nothing of the defender's: the
    observed gradient and the shared model reach it as arguments, the label and the public width ``d`` as its
    grants."""

    name = "gradient-matching"
    requires = frozenset({Grant.SCHEME, Grant.MIXED_LABELS})

    def __init__(self, head: nn.Module, *, config: GradientMatchingConfig | None = None, regression: bool = False) -> None:
        self.head = head
        self.config = config or GradientMatchingConfig()
        self.regression = regression
        self.head.eval()  # the attacker evaluates the shared model deterministically (no dropout)

    def run(self, gradient: dict[str, torch.Tensor], label: torch.Tensor, *, dim: int, masked: bool,
            on_step=None, fixed_mask: torch.Tensor | None = None) -> AttackOutput:
        """Recover a batch-size-1 input of width ``dim`` from ``gradient`` given ``label`` (1, c).

        The relaxed mask has the width of the masked layer (``model.mask_dim`` for the hidden-layer
        victim, else ``dim``). ``on_step(iterations, distance, x, s)`` (optional) is called after every
        L-BFGS step. ``fixed_mask`` is for evaluation only: the attack with the mask already matched
        (held fixed at that value), which no real attacker has."""
        cfg = self.config
        params = {n: p for n, p in self.head.named_parameters() if p.requires_grad}
        if set(gradient) != set(params):
            raise PrivnluError("the observed gradient does not match the model's parameters")
        target = [gradient[n].detach().to(p.dtype) for n, p in params.items()]
        gen = torch.Generator().manual_seed(cfg.seed)
        x = torch.randn(1, dim, generator=gen).requires_grad_(True)
        s_dim = getattr(self.head, "mask_dim", dim)
        if fixed_mask is not None:
            s = fixed_mask.detach().reshape(1, s_dim).to(x.dtype)
        else:
            s = torch.randn(1, s_dim, generator=gen).requires_grad_(True) if masked else None
        variables = [x] + ([s] if s is not None and fixed_mask is None else [])
        opt = torch.optim.LBFGS(variables, lr=cfg.lr, max_iter=cfg.max_iter, history_size=cfg.history)
        plist = list(params.values())

        def distance() -> torch.Tensor:
            loss = task_loss(_logits(self.head, x, s), label, regression=self.regression)
            dummy = torch.autograd.grad(loss, plist, create_graph=True)
            return sum(((a - b) ** 2).sum() for a, b in zip(dummy, target))  # type: ignore[return-value]

        def closure() -> torch.Tensor:
            opt.zero_grad()
            d = distance()
            d.backward()
            return d

        t0 = time.perf_counter()
        steps = math.ceil(cfg.iterations / cfg.max_iter)
        done, still = 0, 0
        before = [v.detach().clone() for v in variables]
        for _ in range(steps):
            opt.step(closure)
            done += cfg.max_iter
            cur = float(distance().detach())
            if on_step is not None:
                on_step(done, cur, x.detach()[0].clone(), None if s is None else s.detach()[0].clone())
            if not math.isfinite(cur) or cur < cfg.tolerance:
                break
            # Fixed point: a whole L-BFGS step that leaves every variable bitwise unchanged also adds
            # no curvature pair (y = 0), so every later step replays it exactly. Two such steps in a
            # row => the remaining iterations cannot change the result (tested bit for bit).
            after = [v.detach() for v in variables]
            still = still + 1 if all(torch.equal(a, b) for a, b in zip(after, before)) else 0
            if cfg.stop_at_fixed_point and still >= 2:
                break
            before = [a.clone() for a in after]
        final = float(distance().detach())
        return AttackOutput(x.detach()[0], None if s is None else s.detach()[0], final, min(done, cfg.iterations),
                            time.perf_counter() - t0)


def score(recovered: torch.Tensor, candidates: torch.Tensor, *, threshold: float = 1e-3) -> tuple[float, bool]:
    """The smallest MSE between the attacker's ``x'`` and any true input row; success if <= threshold.

    Kept outside the attacker: only the evaluation holds the ground truth.
    """
    mse = ((candidates - recovered[None]) ** 2).mean(dim=1).min()
    mse_v = float(mse) if torch.isfinite(mse) else math.inf
    return mse_v, mse_v <= threshold


# -- the Table 2 experiment ------------------------------------------------------

VICTIMS = ("hidden", "input")
# The paper's inputs are CIFAR-10 pixels in [0, 1] (DLG's ToTensor, no normalisation): per-entry variance about
# 0.25^2 (the usual channel standard deviations are 0.247, 0.243, 0.261). The hidden-layer victim's MiniLM input
# is rescaled to that variance, so that the paper's absolute threshold (MSE <= 0.001, 1/60 of the variance) and
# its N(0, 1) dummy initialisation have the same meaning as on images. (Raw MiniLM entries have variance about
# 0.0026: there an MSE of 0.001 would accept a 2-way mixture of inputs as a "recovery".)
PIXEL_VARIANCE = 0.0625


@dataclass(frozen=True)
class Trial:
    """One attack: example ``index`` of the feature matrix; ``k = 0`` is the no-TextHide baseline.

    ``victim``: ``"hidden"`` (the paper's architecture: the mask at a hidden layer of width ``dim``) or
    ``"input"`` (the representation projected to ``dim`` and masked directly; see the module docstring)."""

    dim: int
    k: int
    index: int
    seed: int
    victim: str = "hidden"


def projection(in_dim: int, dim: int, seed: int = 0) -> torch.Tensor:
    """The fixed random projection ``R^{in_dim} -> R^dim`` (entries N(0, 1/in_dim))."""
    g = torch.Generator().manual_seed(10_000 + seed * 7919 + dim)
    return torch.randn(in_dim, dim, generator=g) / math.sqrt(in_dim)


def input_scale(features: torch.Tensor) -> float:
    """The factor that brings the mean per-entry variance of ``features`` to :data:`PIXEL_VARIANCE`."""
    return math.sqrt(PIXEL_VARIANCE / float(features.var(0).mean()))


def _client_batch(features: torch.Tensor, labels: torch.Tensor, trial: Trial, num_labels: int):
    """The attacked example and its ``k - 1`` mixing partners: other data points, distinct from it and from one
    another (batch size 1: the paper mixes the hidden representation "with representations of other datapoints")."""
    gen = torch.Generator().manual_seed(trial.seed)
    k = max(trial.k, 1)
    pool = torch.randperm(features.shape[0] - 1, generator=gen)[: k - 1]
    others = pool + (pool >= trial.index).long()  # skip the attacked index itself
    idx = torch.cat([torch.tensor([trial.index]), others])
    return features[idx], torch.nn.functional.one_hot(labels[idx].long(), num_labels).float()


def hide_one(reps: torch.Tensor, ys: torch.Tensor, dim: int, rng) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                            torch.Tensor]:
    """(1, k)-TextHide of the first row of ``reps`` mixed with all the others (k = len(reps)), m = 1:
    ``sigma o sum_j lambda_j reps[j]`` and ``sum_j lambda_j ys[j]``. Returns (hidden, label, lambda, sigma);
    lambda and sigma are the client's secrets (returned for evaluation only)."""
    from ...mechanisms.texthide import MaskPool, mix, mixing_coefficients

    lam = mixing_coefficients(1, len(reps), rng)
    sigma = MaskPool.generate(1, dim, rng).masks[0]  # type: ignore[index]
    h = mix([reps[j : j + 1] for j in range(len(reps))], lam) * sigma
    y = mix([ys[j : j + 1] for j in range(len(ys))], lam)
    return h, y, lam[0], sigma


def run_trial(features: torch.Tensor, labels: torch.Tensor, trial: Trial, *, num_labels: int = 2,
              config: GradientMatchingConfig | None = None, hidden: int = 256) -> dict:
    """Victim side (TextHide, m = 1, with its own secrets) -> gradient -> attacker -> score. One result row.

    ``hidden``: width of the hidden-layer victim's non-linear layer."""
    from ...models import MLPHead
    from ...rng import SecretGenerator

    if trial.victim not in VICTIMS:
        raise PrivnluError(f"unknown victim '{trial.victim}': choose from {', '.join(VICTIMS)}")
    cfg = config or GradientMatchingConfig()
    xs, ys = _client_batch(features, labels, trial, num_labels)
    torch.manual_seed(trial.seed)  # the current global model: freshly initialised
    if trial.victim == "hidden":
        model: nn.Module = HiddenMaskVictim(features.shape[1], trial.dim, num_labels, hidden)
        xs = xs * input_scale(features)
        truth = xs  # the attacked variable is the input itself (on the pixel scale, see PIXEL_VARIANCE)
        reps = model.represent(xs)
    else:
        model = MLPHead(trial.dim, num_labels, None, 0.0)
        truth = xs @ projection(features.shape[1], trial.dim)
        reps = truth
    sigma = mixture = None
    if trial.k == 0:
        h, y_hidden = reps[:1], ys[:1]
    else:  # the client's TextHide: its own mask (m = 1) and mixing coefficients (never shown to the attacker)
        h, y_hidden, lam, sigma = hide_one(reps, ys, trial.dim, SecretGenerator(trial.seed, warn=False))
        mixture = (lam[:, None] * truth).sum(0)  # the same mix of the inputs themselves (evaluation only)
    params = [p for p in model.parameters() if p.requires_grad]
    logits = model.logits_of_hidden(h) if isinstance(model, HiddenMaskVictim) else model(h)
    grads = torch.autograd.grad(task_loss(logits, y_hidden, regression=False), params)
    grad = {n: g.detach() for (n, _), g in zip(((n, p) for n, p in model.named_parameters() if p.requires_grad), grads)}
    y_hidden = y_hidden.detach()
    curve: list[list[float]] = []

    def on_step(it: int, dist: float, x: torch.Tensor, s: torch.Tensor | None) -> None:
        x_mse = float(((truth - x[None]) ** 2).mean(dim=1).min())
        m_mse = float(f"{float(((s - sigma) ** 2).mean()):.4g}") if (s is not None and sigma is not None) else None
        curve.append([it, float(f"{dist:.4g}"), float(f"{x_mse:.4g}"), m_mse])

    attack = GradientMatchingAttack(model, config=GradientMatchingConfig(**{**cfg.__dict__, "seed": trial.seed}))
    out = attack.run(grad, y_hidden, dim=truth.shape[1], masked=trial.k > 0, on_step=on_step)
    mse, ok = score(out.recovered, truth, threshold=cfg.success_mse)
    row = {"victim": trial.victim, "d": trial.dim, "k": trial.k, "index": trial.index, "seed": trial.seed,
           "mse": mse,
           "success": ok, "grad_distance": out.grad_distance, "iterations": out.iterations,
           "seconds": round(out.seconds, 3), "curve": curve}
    if sigma is not None and out.mask is not None:
        mask_mse = float(((out.mask - sigma) ** 2).mean())
        row.update(mask_mse=mask_mse if math.isfinite(mask_mse) else math.inf, mask_matched=mask_mse <= cfg.success_mse)
    if mixture is not None and trial.k >= 2:
        row["mixture_mse"] = float(((out.recovered - mixture) ** 2).mean())  # x' = the mixed *input*?
    if trial.victim == "hidden":
        rec = analytic_input(grad, "body.0.weight", "body.0.bias")
        a_mse = score(rec, truth, threshold=cfg.success_mse)[0] if rec is not None else math.inf
        row.update(analytic_mse=a_mse, analytic_success=a_mse <= cfg.success_mse)
    else:  # what the input victim's gradient can identify: the encoding s' o x' (and |x|)
        enc = out.recovered * out.mask if out.mask is not None else out.recovered
        enc_mse = float(((enc - h[0].detach()) ** 2).mean())
        abs_mse = float(((enc.abs() - h[0].detach().abs()) ** 2).mean())
        row.update(encoding_mse=enc_mse, encoding_recovered=enc_mse <= cfg.success_mse, abs_mse=abs_mse,
                   abs_recovered=abs_mse <= cfg.success_mse)
    return row


def plan(features_count: int, *, dims: list[int], ks: list[int], trials: int, seed: int = 0,
         victim: str = "hidden") -> list[Trial]:
    """The sweep's trials in rounds: round ``t`` attacks one example (drawn per round) in every (d, k) cell,
    so cells are paired and a sweep cut short has (nearly) equal counts everywhere. Fixed by the arguments,
    so a resumed sweep attacks exactly the examples an uninterrupted one would."""
    gen = torch.Generator().manual_seed(seed)
    out: list[Trial] = []
    for _ in range(trials):
        i = int(torch.randint(0, features_count, (1,), generator=gen))
        for d in dims:
            for k in ks:
                out.append(Trial(d, k, i, seed * 1_000_003 + len(out), victim))
    return out


def row_key(row: dict) -> tuple[int, int, int]:
    """Identifies a finished trial in a results file (for resuming)."""
    return int(row["d"]), int(row["k"]), int(row["seed"])


def sweep(features: torch.Tensor, labels: torch.Tensor, *, dims: list[int], ks: list[int], trials: int,
          seed: int = 0, config: GradientMatchingConfig | None = None, progress=None, victim: str = "hidden",
          skip: set[tuple[int, int, int]] = frozenset(), deadline: float | None = None) -> list[dict]:  # type: ignore[assignment]
    """``trials`` independent attacks per (d, k); ``k = 0`` is the no-TextHide baseline. Batch size 1, m = 1.

    Trials whose :func:`row_key` is in ``skip`` (finished in an earlier, interrupted sweep) are not re-run;
    no new trial starts after ``deadline`` (a ``time.time()`` value)."""
    rows = []
    for t in plan(features.shape[0], dims=dims, ks=ks, trials=trials, seed=seed, victim=victim):
        if (t.dim, t.k, t.seed) in skip:
            continue
        if deadline is not None and time.time() >= deadline:
            break
        rows.append(run_trial(features, labels, t, config=config))
        if progress is not None:
            progress(rows[-1])
    return rows


def summarize(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Success rate per (d, k): ``{"d=4": {"baseline": .., "k=1": ..}}``."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        cell = out.setdefault(f"d={r['d']}", {})
        key = "baseline" if r["k"] == 0 else f"k={r['k']}"
        cell.setdefault(key, [])  # type: ignore[arg-type]
        cell[key].append(1.0 if r["success"] else 0.0)  # type: ignore[union-attr]
    return {d: {k: sum(v) / len(v) for k, v in cells.items()} for d, cells in out.items()}  # type: ignore[arg-type]


# -- attacking a captured Flower run -------------------------------------------------

def head_from_arrays(arrays: dict) -> nn.Module:
    """Rebuild the MLP head the server sent (``head.net.<i>.weight/bias`` arrays) for the attacker."""
    from ...models import MLPHead

    ws = sorted((int(n.split(".")[2]), n) for n in arrays if n.startswith("head.net.") and n.endswith(".weight"))
    if not ws:
        raise PrivnluError("the capture holds no MLP head parameters")
    shapes = [tuple(arrays[n].shape) for _, n in ws]
    head = MLPHead(shapes[0][1], shapes[-1][0], [s[0] for s in shapes[:-1]], 0.0)
    state = {n[len("head."):]: torch.as_tensor(arrays[n]).float() for n in arrays if n.startswith("head.")}
    head.load_state_dict(state)
    return head


def infer_label(gradient: dict[str, torch.Tensor], bias_name: str) -> torch.Tensor:
    """iDLG (Zhao et al. 2020): for one example and cross-entropy, the last bias gradient is
    ``softmax(z) - y``, negative exactly at the true class. Returns a one-hot (1, c) label."""
    g = gradient[bias_name].flatten()
    return torch.nn.functional.one_hot(g.argmin(), g.numel()).float()[None]


def attack_capture(capture, *, round: int, node_id: int | None = None, label: torch.Tensor | None = None,
                   masked: bool = True, config: GradientMatchingConfig | None = None) -> tuple[AttackOutput, dict]:
    """Run the attack on one gradient a client sent in a recorded Flower run.

    ``capture`` is a :class:`~privnlu.federated.wire.WireLog` (e.g. from ``load_capture``): what the
    eavesdropper saw. The model is the one the server sent that round; the label is inferred from the
    gradient (iDLG) unless given.
    """
    sent = [e for e in capture.sent if e["round"] == round and "arrays" in e]
    got = [e for e in capture.received if e["round"] == round and "error" not in e
           and (node_id is None or e["node_id"] == node_id)]
    if not sent or not got:
        raise PrivnluError(f"the capture has no model and client gradient for round {round}"
                           + (f" from node {node_id}" if node_id is not None else ""))
    model_arrays = next(iter(sent[0]["arrays"].values()))
    entry = got[0]
    if "gradients" not in entry["arrays"]:
        raise PrivnluError("that message carries weights, not a gradient (FedAvg); the attack needs a FedSGD run")
    grads = {n[len("head."):]: torch.as_tensor(a).float() for n, a in entry["arrays"]["gradients"].items() if n.startswith("head.")}
    head = head_from_arrays(model_arrays)
    if label is None:
        last_bias = max((n for n in grads if n.endswith(".bias")), key=lambda n: int(n.split(".")[1]))
        label = infer_label(grads, last_bias)
    dim = head.net[0].in_features
    out = GradientMatchingAttack(head, config=config).run(grads, label, dim=dim, masked=masked)
    return out, {"round": round, "node_id": entry["node_id"], "label": label.argmax().item(),
                 "num_examples": entry["metrics"]["metrics"].get("num-examples")}


# -- the Table 2 sweep as a run ---------------------------------------------------------------------------------

def run_sweep(out: str | Path, *, task: str = "sst2", data_dir: str | None = None, cache_dir: str | None = None,
              dims: list[int] = (4, 16, 64, 256, 1024), ks: list[int] = (0, 1, 2, 4), trials: int = 50,
              iterations: int = 1200, seed: int = 0, victim: str = "hidden", train_limit: int | None = None,
              max_minutes: float | None = None, resume: bool = False, log=lambda s: None) -> dict:
    """TextHide Table 2: ``trials`` batch-size-1 attacks per (d, k) with m = 1, on the task's cached training
    representations (k = 0 is the no-TextHide baseline), written to ``out`` after every finished round (so
    ``resume`` keeps finished attacks); returns the record (kind ``gradient_attack``)."""
    from ...data import get_task
    from ...io import read_json, write_json_atomic
    from ...models import FeatureCache, load_encoder
    from ...paper_values.huang2020_gradient import PAPER_TABLE2

    if victim not in VICTIMS:
        raise PrivnluError(f"--victim must be one of {', '.join(VICTIMS)}, not '{victim}'")
    cfg = GradientMatchingConfig(iterations=iterations, seed=seed)
    out, dims, ks = Path(out), list(dims), list(ks)
    torch.set_num_threads(1)
    t0 = time.time()
    spec = get_task(task)
    train = spec.load("train", data_dir).head(train_limit)
    feats = FeatureCache(cache_dir).get(load_encoder(), train, progress=False)
    settings = ("gradient_attack", "sweep", spec.name, dims, ks, trials, seed, iterations, victim, train_limit)
    done: list[dict] = []
    if resume and out.exists():
        try:
            old = read_json(out)
            same = (old["kind"], old["source"], old["task"], old["dims"], old["ks"], old["trials"],
                    old["config"]["seed"], old["config"]["iterations"], old.get("victim", "input"),
                    old.get("train_limit")) == settings
            done = list(old["rows"])
        except (OSError, ValueError, KeyError, TypeError):
            raise PrivnluError(f"--resume: {out} is not an `attack gradient` sweep result") from None
        if not same:
            raise PrivnluError(f"--resume: {out} was written with other settings (task, dims, ks, trials, seed, "
                               "iterations, victim, train limit)")
    skip = {row_key(r) for r in done}
    if skip:
        log(f"resuming {out}: {len(skip)} finished attacks kept")

    def record(rows: list[dict], complete: bool) -> dict:
        return {"kind": "gradient_attack", "source": "sweep", "complete": complete, "task": spec.name,
                "train_limit": train_limit, "encoder": "packaged MiniLM (cls)", "victim": victim, "batch_size": 1,
                "m": 1, "trials": trials, "dims": dims, "ks": ks, "config": cfg.__dict__, "summary": summarize(rows),
                "paper": PAPER_TABLE2, "rows": rows, "seconds": round(time.time() - t0, 1)}

    def progress(row: dict) -> None:
        done.append(row)
        log(f"d={row['d']:5d} k={row['k']} mse={row['mse']:.2e} success={row['success']} ({row['seconds']:.1f}s)")
        if len(done) % max(1, len(dims) * len(ks)) == 0:  # a finished round: keep partial results
            write_json_atomic(out, record(done, complete=False))

    deadline = t0 + 60 * max_minutes if max_minutes else None
    sweep(feats.features, feats.labels, dims=dims, ks=ks, trials=trials, seed=seed, config=cfg, progress=progress,
          skip=skip, victim=victim, deadline=deadline)
    rec = record(done, complete=len(done) == trials * len(dims) * len(ks))
    write_json_atomic(out, rec)
    return rec
