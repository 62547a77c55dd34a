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

Differences from the paper: the paper mimicked text with LeNet on CIFAR-10; here
the victim is the real pipeline (MiniLM sentence representations, projected to
``d`` by a fixed random matrix, through privnlu's ReLU MLP head).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from torch import nn

from ..errors import PrivnluError
from ..training import task_loss


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


class GradientMatchingAttack:
    """DLG with a relaxed dummy mask (TextHide Algorithm 3). Holds the model, nothing of the defender's."""

    def __init__(self, head: nn.Module, *, config: GradientMatchingConfig | None = None, regression: bool = False) -> None:
        self.head = head
        self.config = config or GradientMatchingConfig()
        self.regression = regression
        self.head.eval()  # the attacker evaluates the shared model deterministically (no dropout)

    def run(self, gradient: dict[str, torch.Tensor], label: torch.Tensor, *, dim: int, masked: bool,
            on_step=None) -> AttackOutput:
        """Recover a batch-size-1 input of width ``dim`` from ``gradient`` given ``label`` (1, c).

        ``on_step(iterations, distance, x, s)`` (optional) is called after every L-BFGS step."""
        cfg = self.config
        params = {n: p for n, p in self.head.named_parameters() if p.requires_grad}
        if set(gradient) != set(params):
            raise PrivnluError("the observed gradient does not match the model's parameters")
        target = [gradient[n].detach().to(p.dtype) for n, p in params.items()]
        gen = torch.Generator().manual_seed(cfg.seed)
        x = torch.randn(1, dim, generator=gen).requires_grad_(True)
        s = torch.randn(1, dim, generator=gen).requires_grad_(True) if masked else None
        variables = [x] + ([s] if s is not None else [])
        opt = torch.optim.LBFGS(variables, lr=cfg.lr, max_iter=cfg.max_iter, history_size=cfg.history)
        plist = list(params.values())

        def distance() -> torch.Tensor:
            inp = x * s if s is not None else x
            loss = task_loss(self.head(inp), label, regression=self.regression)
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

PAPER_TABLE2 = {  # TextHide paper, Table 2 (LeNet on CIFAR-10), success rate by d
    "baseline": 0.82,
    "k=1": {4: 0.76, 16: 0.56, 64: 0.30, 256: 0.22, 1024: 0.08},
    "k>=2": 0.0,
}


@dataclass(frozen=True)
class Trial:
    """One attack: example ``index`` of the feature matrix, projected to ``dim``; ``k = 0`` is the no-TextHide baseline."""

    dim: int
    k: int
    index: int
    seed: int


def projection(in_dim: int, dim: int, seed: int = 0) -> torch.Tensor:
    """The fixed random projection ``R^{in_dim} -> R^dim`` (entries N(0, 1/in_dim))."""
    g = torch.Generator().manual_seed(10_000 + seed * 7919 + dim)
    return torch.randn(in_dim, dim, generator=g) / math.sqrt(in_dim)


def run_trial(features: torch.Tensor, labels: torch.Tensor, trial: Trial, *, num_labels: int = 2,
              config: GradientMatchingConfig | None = None, m: int = 1) -> dict:
    """Victim side (TextHide with its own secrets) -> gradient -> attacker -> score. Returns one result row."""
    from ..mechanisms.texthide import TextHide
    from ..models import MLPHead
    from ..rng import SecretGenerator

    cfg = config or GradientMatchingConfig()
    P = projection(features.shape[1], trial.dim)
    gen = torch.Generator().manual_seed(trial.seed)
    torch.manual_seed(trial.seed)  # the current global model: a freshly initialised head
    head = MLPHead(trial.dim, num_labels, None, 0.0)
    k = max(trial.k, 1)
    others = torch.randint(0, features.shape[0], (k - 1,), generator=gen)
    idx = torch.cat([torch.tensor([trial.index]), others])
    xs = features[idx] @ P
    ys = torch.nn.functional.one_hot(labels[idx].long(), num_labels).float()
    if trial.k == 0:
        x_hidden, y_hidden = xs[:1], ys[:1]
    else:  # the client's TextHide: its own pool of m masks and one-time keys (never shown to the attacker)
        rng = SecretGenerator(trial.seed, warn=False)
        hb = TextHide(m, trial.k, dim=trial.dim, rng=rng).hide(xs, ys)
        x_hidden, y_hidden = hb.x[:1], hb.y[:1]
    grad = victim_gradient(head, x_hidden, y_hidden)
    attack = GradientMatchingAttack(head, config=GradientMatchingConfig(**{**cfg.__dict__, "seed": trial.seed}))
    out = attack.run(grad, y_hidden, dim=trial.dim, masked=trial.k > 0)
    mse, ok = score(out.recovered, xs, threshold=cfg.success_mse)
    enc = out.recovered * out.mask if out.mask is not None else out.recovered
    enc_mse = float(((enc - x_hidden[0]) ** 2).mean())
    abs_mse = float(((enc.abs() - x_hidden[0].abs()) ** 2).mean())
    return {"d": trial.dim, "k": trial.k, "index": trial.index, "seed": trial.seed, "mse": mse, "success": ok,
            "encoding_mse": enc_mse, "encoding_recovered": enc_mse <= cfg.success_mse,
            "abs_mse": abs_mse, "abs_recovered": abs_mse <= cfg.success_mse,
            "grad_distance": out.grad_distance, "iterations": out.iterations, "seconds": round(out.seconds, 3)}


def plan(features_count: int, *, dims: list[int], ks: list[int], trials: int, seed: int = 0) -> list[Trial]:
    """The sweep's trials, in order (d outer, k, trial): fixed by (dims, ks, trials, seed), so a resumed
    sweep attacks exactly the examples an uninterrupted one would."""
    gen = torch.Generator().manual_seed(seed)
    out: list[Trial] = []
    for d in dims:
        for k in ks:
            for _ in range(trials):
                i = int(torch.randint(0, features_count, (1,), generator=gen))
                out.append(Trial(d, k, i, seed * 1_000_003 + len(out)))
    return out


def sweep(features: torch.Tensor, labels: torch.Tensor, *, dims: list[int], ks: list[int], trials: int,
          seed: int = 0, config: GradientMatchingConfig | None = None, progress=None,
          skip: set[tuple[int, int]] = frozenset()) -> list[dict]:  # type: ignore[assignment]
    """``trials`` independent attacks per (d, k); ``k = 0`` is the no-TextHide baseline. Batch size 1, m = 1.

    Cells ``(d, k)`` in ``skip`` (already finished in an earlier, interrupted sweep) are not re-run."""
    rows = []
    for t in plan(features.shape[0], dims=dims, ks=ks, trials=trials, seed=seed):
        if (t.dim, t.k) in skip:
            continue
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
    from ..models import MLPHead

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
