"""One-run privacy audit of DP-SGD (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run").

The game. ``m`` canaries each enter the training set independently with probability 1/2 (``S_i`` uniform on
{IN, OUT}, drawn by :class:`~privnlu.rng.SecretGenerator`). One DP-SGD run (:func:`~privnlu.training.dp_sgd.train_head`)
trains a head on the real rows plus the IN canaries. The auditor scores every canary by the trained model's
log-probability of the canary's label (higher: guessed IN), guesses IN for the ``k+`` highest scores and OUT for
the ``k-`` lowest, and abstains on the rest: ``r = k+ + k-`` guesses, ``v`` of them correct.

The bound (their main theorem, stated with delta). If the run is ``(epsilon, delta)``-DP with respect to adding or removing one
canary, then for every ``v``

    P[W >= v] <= f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i,
    f(v) = P[Binomial(r, q) >= v],  q = e^epsilon / (1 + e^epsilon),

(:func:`p_value`; the maximum over ``i > v`` is attained at ``i = v``, where ``f(0) = 1``). The audit rejects
``epsilon`` when this bound is <= ``beta`` and reports the largest rejected epsilon (:func:`epsilon_lower_bound`).
A run that is ``(eps*, delta)``-DP is also ``(eps', delta)``-DP for every ``eps' >= eps*``, so the lower bound
exceeds ``eps*`` with probability at most ``beta``. ``delta = 0`` is their pure-DP result: the binomial tail alone.

The guesses. ``(k+, k-)`` is chosen after the scores are seen, from the declared set
``k+ = k- = round(f m)``, ``f`` in :data:`GUESS_FRACTIONS`; each candidate's bound is taken at ``beta / |set|``
(Bonferroni), so the best of them still holds at confidence ``1 - beta`` overall.

The canaries (black box, input space). Gaussian directions scaled to the median L2 norm of the real rows, with
uniformly random labels: in ``d`` dimensions such rows are nearly orthogonal to the real data and to each other,
so a head that saw one fits its random label while an unseen one gets the label's chance rate. The auditor sees
only the trained model's outputs on the canaries (no gradients, no intermediate models), which makes the bound
weaker than the truth, never unsound.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ...errors import PrivnluError, require
from ...rng import SecretGenerator
from ...schemas import path_ref

#: one-sided level of the test: the bound holds with probability >= 1 - BETA
BETA = 0.05
#: the declared guess sizes: k+ = k- = round(f m) for each f (Bonferroni over the distinct ones)
GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.25)
#: the largest epsilon searched: q = 1 - 2e-22, beyond any test's reach
EPS_MAX = 50.0
CANARY_DESIGN = ("input-space canaries: Gaussian directions scaled to the median L2 norm of the real rows, each with "
                 "a uniformly random label; score: the trained model's log-probability of the canary's label")


# -- the bound (pure math) ------------------------------------------------------------------------------------

def p_value(v: int, r: int, m: int, epsilon: float, delta: float) -> float:
    """Upper bound on ``P[W >= v]`` for an ``(epsilon, delta)``-DP run (Steinke et al.'s theorem with delta, see the module docstring)."""
    from scipy.stats import binom

    require(0 <= v <= r <= m, f"need 0 <= v <= r <= m, not v = {v}, r = {r}, m = {m}")
    require(epsilon >= 0 and 0 <= delta <= 1, f"need epsilon >= 0 and delta in [0, 1], not {epsilon}, {delta}")
    q = 1.0 / (1.0 + math.exp(-epsilon))
    tail = float(binom.sf(v - 1, r, q))  # f(v) = P[Bin(r, q) >= v]
    if delta == 0 or v == 0:
        return min(1.0, tail)
    below = np.cumsum(binom.pmf(np.arange(v - 1, -1, -1), r, q))  # f(v - i) - f(v) for i = 1 .. v
    return min(1.0, tail + 2 * m * delta * float(np.max(below / np.arange(1, v + 1))))


def epsilon_lower_bound(v: int, r: int, m: int, delta: float, beta: float = BETA) -> float:
    """The largest epsilon that ``v`` correct of ``r`` guesses (``m`` canaries) rejects at level ``beta``:
    ``sup {eps >= 0 : p_value(v, r, m, eps, delta) <= beta}``, 0 when none is rejected.

    ``p_value >= f(v)``, which increases with epsilon, so no epsilon above the first one with ``f(v) > beta`` is
    rejected; below it a grid finds the last rejected point, and bisection refines it to 1e-7."""
    require(0 < beta < 1, f"beta must be in (0, 1), not {beta}")
    if r == 0:
        return 0.0
    from scipy.stats import binom

    hi = 1.0
    while hi < EPS_MAX and binom.sf(v - 1, r, 1.0 / (1.0 + math.exp(-hi))) <= beta:
        hi = min(2 * hi, EPS_MAX)
    grid = np.linspace(0.0, hi, 257)
    rejected = [i for i, e in enumerate(grid) if p_value(v, r, m, float(e), delta) <= beta]
    if not rejected:
        return 0.0
    i = rejected[-1]
    if i == len(grid) - 1:  # only at EPS_MAX: every epsilon searched is rejected
        return float(grid[i])
    lo, up = float(grid[i]), float(grid[i + 1])
    while up - lo > 1e-7:
        mid = (lo + up) / 2
        lo, up = (mid, up) if p_value(v, r, m, mid, delta) <= beta else (lo, mid)
    return lo


def guess_sizes(m: int, fractions: tuple[float, ...] = GUESS_FRACTIONS) -> list[int]:
    """The declared ``k`` (guesses per side) for ``m`` canaries: ``round(f m)`` for each ``f``, distinct, 1..m/2."""
    return sorted({min(max(1, round(f * m)), m // 2) for f in fractions} - {0})


def count_correct(scores: np.ndarray, included: np.ndarray, k_in: int, k_out: int) -> int:
    """Correct guesses: IN for the ``k_in`` highest scores, OUT for the ``k_out`` lowest (ties: by index)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    inc = np.asarray(included, dtype=bool)
    return int(inc[order[:k_in]].sum() + (~inc[order[len(order) - k_out:]]).sum())


def audit_guesses(scores: np.ndarray, included: np.ndarray, delta: float, *, beta: float = BETA,
                  fractions: tuple[float, ...] = GUESS_FRACTIONS) -> dict:
    """The best Bonferroni-corrected bound over the declared guess sizes, and every candidate's counts."""
    m = len(scores)
    sizes = guess_sizes(m, fractions)
    level = beta / len(sizes)
    cands = []
    for k in sizes:
        v = count_correct(scores, included, k, k)
        cands.append({"k_in": k, "k_out": k, "guesses": 2 * k, "correct": v,
                      "epsilon_lb": epsilon_lower_bound(v, 2 * k, m, delta, level),
                      "power": epsilon_lower_bound(2 * k, 2 * k, m, delta, level)})
    best = max(cands, key=lambda c: (c["epsilon_lb"], -c["guesses"]))
    return {"best": best, "candidates": cands, "level_per_candidate": level,
            "power": max(c["power"] for c in cands)}


# -- canaries and scores ----------------------------------------------------------------------------------------

def make_canaries(real: torch.Tensor, m: int, num_outputs: int, rng: SecretGenerator) -> tuple[torch.Tensor,
                                                                                               torch.Tensor]:
    """``m`` input-space canaries: Gaussian directions scaled to the median L2 norm of ``real``, random labels."""
    g = rng.normal((m, real.shape[1]), dtype=torch.float64)
    scale = float(real.double().norm(dim=1).median())
    x = (g / g.norm(dim=1, keepdim=True) * scale).to(real.dtype)
    return x, rng.randint(num_outputs, m)


@torch.no_grad()
def label_log_prob(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int = 4096) -> np.ndarray:
    """``log p(y_i | x_i)`` under ``model`` (eval mode): the canaries' scores."""
    model.eval()
    device = next(model.parameters()).device
    out = [torch.log_softmax(model(x[s:s + chunk].float().to(device)).double(), 1).cpu()
           for s in range(0, len(x), chunk)]
    return torch.cat(out)[torch.arange(len(y)), y].numpy()


# -- features ------------------------------------------------------------------------------------------------------

def task_features(task: str, *, train_limit: int | None = 2000, data_dir: str | None = None, model: str | None = None,
                  pooling: str = "auto", max_length: int = 128, cache_dir: str | None = None, device: str = "cpu",
                  progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, int, dict]:
    """A classification task's frozen training representations from the feature cache (encoded on a miss):
    (features, labels, classes, source)."""
    from ...data import get_task
    from ...models import FeatureCache, load_encoder
    from ...models.precision import resolve_bf16

    spec = get_task(task)
    require(not spec.is_regression, f"task {task} is a regression task; the audit needs class labels")
    ds = spec.load("train", data_dir).head(train_limit)
    enc = load_encoder(model, pooling=pooling, device=device)
    bf16 = resolve_bf16("auto", device)
    got = FeatureCache(cache_dir).get(enc, ds, max_length=max_length, bf16=bf16, progress=progress)
    source = {"task": task, "split": "train", "rows": len(ds), "model": enc.name, "pooling": enc.pooling,
              "max_length": max_length, "precision": "bf16" if bf16 else "fp32"}
    return got.features.float(), got.labels.long(), len(spec.label_names), source


def file_features(path: str) -> tuple[torch.Tensor, torch.Tensor, int, dict]:
    """Features from a safetensors file (never unpickled): tensors ``features`` (n x d, float) and ``labels``
    (n class ids); the classes are ``labels.max() + 1``."""
    from pathlib import Path

    from safetensors import SafetensorError
    from safetensors.torch import load_file

    require(Path(path).is_file(), f"--features {path}: no such file")
    try:
        blob = load_file(path)
    except (SafetensorError, OSError, ValueError) as exc:
        raise PrivnluError(f"--features {path}: not a safetensors file ({str(exc).splitlines()[0][:120]})") from None
    require({"features", "labels"} <= set(blob), f"--features {path} needs tensors 'features' and 'labels', "
                                                 f"not {sorted(blob)}")
    x, y = blob["features"], blob["labels"]
    require(x.dim() == 2 and x.is_floating_point() and bool(torch.isfinite(x).all()),
            f"--features {path}: 'features' must be a finite float matrix, not {x.dtype} {tuple(x.shape)}")
    require(y.dim() == 1 and len(y) == len(x) and not y.is_floating_point() and len(y) > 0 and int(y.min()) >= 0,
            f"--features {path}: 'labels' must hold one class id >= 0 per row")
    return x.float(), y.long(), int(y.max()) + 1, {"features": path_ref(path), "rows": len(x)}  # name + sha256


# -- the audit ------------------------------------------------------------------------------------------------------

#: the most canaries an audit takes, whatever the machine
MAX_CANARIES = 1_000_000
#: memory per canary value at its peak: the canaries, their copy in the training set, the batches (float32 each)
CANARY_BYTES_PER_VALUE = 16


def check_canaries(canaries: int, dim: int, *, memory: int | None = None) -> None:
    """One line (before any work) unless ``canaries`` is in ``[2, MAX_CANARIES]`` and their values at width ``dim``
    fit :data:`~privnlu.attacks.privacy_audit.mechanism.MEMORY_FRACTION` of the machine's physical memory."""
    from .mechanism import MEMORY_FRACTION, physical_memory

    require(isinstance(canaries, int) and 2 <= canaries <= MAX_CANARIES,
            f"--canaries must be a whole number in [2, {MAX_CANARIES:,}], not {canaries:,}")
    total = memory if memory is not None else physical_memory()
    need = CANARY_BYTES_PER_VALUE * canaries * dim
    require(need <= MEMORY_FRACTION * total, f"--canaries {canaries:,} at width {dim:,} need about "
            f"{need / 2**30:.1f} GiB of memory, more than {MEMORY_FRACTION:.0%} of this machine's "
            f"{total / 2**30:.1f} GiB; lower --canaries")


def audit_dp_sgd(features: torch.Tensor, labels: torch.Tensor, *, num_outputs: int, config: Any, canaries: int = 1000,
                 under_noise: float | None = None, hidden: tuple[int, ...] = (128,), seed: int | None = None,
                 progress: bool = False, source: dict | None = None) -> dict:
    """Audit one DP-SGD run (:class:`~privnlu.training.dp_sgd.DPSGDConfig` ``config``: the claim and the training
    settings) with ``canaries`` input-space canaries; returns the record (kind ``dp-sgd-audit``).

    ``under_noise``: divide the calibrated noise multiplier by this factor while the record still states the
    claimed epsilon (a deliberately broken run the audit should catch). ``delta``: the config's, else
    ``1 / (10 (n + m))``; it must be <= ``1 / (n + m)``, so that it is fixed before the canaries are drawn and
    within ``1 / n`` of every training set the draw can give. ``seed``: EXPERIMENTS ONLY."""
    from ...training.dp_sgd import plan_noise, train_head
    from ...version import __version__

    require(features.dim() == 2 and len(features) >= 1, "the features must be a matrix with one row per example")
    require(labels.dim() == 1 and len(labels) == len(features) and not labels.is_floating_point(),
            "the audit needs one class id per feature row")
    require(num_outputs >= 2, "the audit needs a classification task with at least 2 classes")
    require(int(labels.min()) >= 0 and int(labels.max()) < num_outputs, f"labels must be in [0, {num_outputs})")
    check_canaries(canaries, features.shape[1])
    require(under_noise is None or (math.isfinite(under_noise) and under_noise >= 1),
            f"the under-noise factor must be >= 1, not {under_noise}")
    n_real, n_max = len(features), len(features) + canaries
    delta = config.delta if config.delta is not None else 1 / (10 * n_max)
    require(delta <= 1 / n_max, f"delta = {delta:g} is above 1/(n + m) = {1 / n_max:g} ({n_real} rows + {canaries} "
                                f"canaries); use delta <= {1 / n_max:g}")
    rng = SecretGenerator(seed, warn=False)
    cx, cy = make_canaries(features, canaries, num_outputs, rng)
    included = (rng.signs(canaries) > 0).numpy()
    inc = torch.from_numpy(included)
    x = torch.cat([features, cx[inc]])
    y = torch.cat([labels.long(), cy[inc]])
    # the noise the claim calibrates to (an explicit noise multiplier is kept unless the run is under-noised)
    plan = plan_noise(len(x), dataclasses.replace(config, delta=delta,
                                                  noise_multiplier=None if under_noise else config.noise_multiplier))
    calibrated = plan["noise_multiplier"] if under_noise or config.noise_multiplier is None else None
    sigma = calibrated / under_noise if under_noise else config.noise_multiplier
    run_cfg = dataclasses.replace(config, delta=delta, noise_multiplier=sigma, seed=seed)
    res = train_head(x, y, num_outputs=num_outputs, config=run_cfg, hidden=hidden, dropout=0.0, progress=progress)
    require(abs(res.sample_rate - plan["sample_rate"]) < 1e-12 and res.steps == plan["steps"],
            "DP-SGD took another sample rate or step count than the audit calibrated for")
    scores = label_log_prob(res.model, cx, cy)
    g = audit_guesses(scores, included, delta)
    best = g["best"]
    lb, claim = best["epsilon_lb"], float(config.epsilon)
    consistent = lb <= claim
    if not consistent:
        verdict = "VIOLATION: the lower bound exceeds the claimed epsilon"
    elif claim >= g["power"]:
        verdict = "consistent, but the claim is above the audit's power (no outcome could refute it)"
    else:
        verdict = "consistent with the claim"
    return {
        "kind": "dp-sgd-audit", "privnlu": __version__, "claimed_epsilon": claim, "delta": delta,
        "accounted_epsilon": res.epsilon, "noise_multiplier": res.noise_multiplier,
        "calibrated_noise_multiplier": calibrated, "under_noise": under_noise, "sample_rate": res.sample_rate,
        "steps": res.steps, "accountant": res.accountant, "clip": config.clip, "epochs": config.epochs,
        "batch_size": config.batch_size, "lr": config.lr, "hidden": list(hidden), "real_rows": n_real,
        "dim": int(features.shape[1]), "num_outputs": num_outputs, "canaries": canaries,
        "canaries_in": int(included.sum()), "guesses": best["guesses"], "k_in": best["k_in"], "k_out": best["k_out"],
        "correct": best["correct"], "epsilon_lb": lb, "confidence": 1 - BETA, "power": g["power"],
        "consistent": consistent, "consistent_with_accountant": lb <= res.epsilon, "verdict": verdict,
        "guess_selection": f"best of k+ = k- in {[c['k_in'] for c in g['candidates']]}, each bound at beta / "
                           f"{len(g['candidates'])} = {g['level_per_candidate']:.4g} (Bonferroni)",
        "candidates": g["candidates"], "canary_design": CANARY_DESIGN,
        "bound": "Steinke, Nasr & Jagielski 2023, the one-run bound with delta", "experiment_seed": seed,
        "source": source or {}, "train_loss": res.history[-1]["train_loss"] if res.history else None}


# -- output ---------------------------------------------------------------------------------------------------------

def summary(rec: dict) -> list[str]:
    """The record in a few plain lines (what ``privnlu dp audit-sgd`` prints on stderr)."""
    under = rec["under_noise"]
    sigma = f"noise multiplier {rec['noise_multiplier']:.4g}"
    if under:
        sigma += f" = calibrated {rec['calibrated_noise_multiplier']:.4g} / {under:g} (deliberately under-noised)"
    return [f"dp-sgd: {rec['correct']} of {rec['guesses']} guesses correct (k+ = k- = {rec['k_in']}; m = "
            f"{rec['canaries']} canaries, {rec['canaries_in']} in); {sigma}; accountant's epsilon "
            f"{rec['accounted_epsilon']:.4g}",
            f"dp-sgd: eps_lb = {rec['epsilon_lb']:.3f} (95 %), claimed ({rec['claimed_epsilon']:g}, "
            f"{rec['delta']:.3g})-DP, power {rec['power']:.2f}: {rec['verdict']}"]


def markdown(rec: dict) -> str:
    """The record as a one-row Markdown table."""
    head = ("claimed epsilon", "delta", "accounted epsilon", "noise multiplier", "m", "guesses r", "correct v",
            "epsilon lower bound (95 %)", "verdict")
    row = (f"{rec['claimed_epsilon']:g}", f"{rec['delta']:.3g}", f"{rec['accounted_epsilon']:.4g}",
           f"{rec['noise_multiplier']:.4g}", str(rec["canaries"]), str(rec["guesses"]), str(rec["correct"]),
           f"{rec['epsilon_lb']:.3f}", rec["verdict"])
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), "| " + " | ".join(row) + " |"])
