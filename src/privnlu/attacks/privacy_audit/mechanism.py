"""Empirical DP audit: a statistical lower bound on a mechanism's epsilon, to test its privacy claim.

An (epsilon, delta)-DP mechanism ``M`` bounds every test that tells ``M(x)`` from
``M(x')`` for neighbours ``x, x'``: for any rejection region, false positive and
false negative rates satisfy ``1 - delta - FNR <= e^epsilon FPR``, i.e.

    epsilon >= ln((1 - delta - FNR) / FPR).

The audit (in the spirit of Jagielski et al. 2020, Nasr et al. 2021):

1. **Worst-case neighbours.** For DP instance encoding (:mod:`privnlu.mechanisms.dp`)
   ``x = C v``, ``x' = -C v`` on the clipping boundary, with ``v`` the unit vector
   (in the clipping norm) whose difference is largest in the norm the noise is
   calibrated in: ``e_1`` when both norms agree (``||x - x'|| = 2C``), ``1/sqrt(d)``
   for L2 clipping with Laplace noise (the paper's calibration: ``||x - x'||_1 =
   2C sqrt(d)``). One trial is every encoding the example takes part in
   (``participations``), each with full weight, drawn by the real
   :class:`~privnlu.mechanisms.dp.DPTextHide` (``k = 1``, no mask: masks are
   post-processing and only hide more).
   For d_chi (:mod:`privnlu.mechanisms.dchi`): two tokens at embedding distance
   ``d(x, x')``, drawn by the real ``m_rep`` / ``m_txt``; the claim is ``eta d(x, x')``
   with ``delta = 0``.
2. **Statistic.** The optimal linear statistic: the projection of the output on
   ``u = (x - x') / ||x - x'||_2`` (for ``M_txt`` of the output token's embedding),
   summed over the trial's encodings. For the Gaussian it is the likelihood ratio.
3. **Threshold distinguisher.** Half of the draws choose the threshold ``t`` (the
   one with the best bound on that half, at a stricter 99.9 % so that a lucky tail
   of that half is not chosen); the other half, never seen by that
   choice, gives the bound: ``eps_lb = ln((1 - delta - FNR_hi) / FPR_hi)`` with
   ``FPR_hi``, ``FNR_hi`` the upper ends of two-sided 95 % Clopper-Pearson intervals
   (scipy's beta quantiles). A sound mechanism gives ``eps_lb <= epsilon`` (with
   probability >= 95 % over the audit's draws); ``eps_lb > epsilon`` refutes the claim.

**Power.** With ``n`` held-out draws per hypothesis, no FPR below ``1 - 0.025^(1/n)
~ 3.69 / n`` can be certified, so ``eps_lb <= ln((1 - delta - FNR_hi) / FPR_hi) <=
ln(n / 3.69)`` (:func:`max_certifiable_epsilon`): a claim above that cannot be
refuted at ``n`` draws, whatever the mechanism does.

**Bounded work.** :func:`check_work` refuses, before any draw, ``draws`` above :data:`MAX_DRAWS`, a width above
:data:`MAX_DIM`, more than :data:`MAX_NOISE_VALUES` noise values in all, and any run whose memory estimate
(:func:`memory_estimate`: the statistics kept per draw plus one chunk of encodings, which shrinks for wide
representations) exceeds :data:`MEMORY_FRACTION` of the machine's physical memory. One audit checks one claim: a DP
claim (``dp-ie``) or a d_chi claim (``dchi-*``), never both in one call.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from ...errors import require, require_choice
from ...rng import SecretGenerator
from ...stats import CONFIDENCE, clopper_pearson

SELECTION_CONFIDENCE = 0.999  # for choosing the threshold on the first half only
DCHI_MECHANISMS = ("rep", "txt")

#: fixed caps, whatever the machine: draws per hypothesis, representation width, and noise values drawn in all
MAX_DRAWS = 100_000_000
MAX_DIM = 1_048_576
MAX_NOISE_VALUES = 20_000_000_000
#: the share of physical memory an audit may plan to use
MEMORY_FRACTION = 0.5
#: memory per draw and hypothesis pair: two float64 statistics, their concatenation, halves and sorted copies
STATS_BYTES_PER_DRAW = 64
#: memory per value of one chunk of encodings: input rows, noise and output (float32), the float64 projection
CHUNK_BYTES_PER_VALUE = 24
#: one chunk of encodings is at most this large (and at most :data:`CHUNK_ROWS` rows)
CHUNK_BYTES = 256 * 2**20
CHUNK_ROWS = 20_000


def physical_memory() -> int:
    """This machine's physical memory in bytes (8 GiB where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return 8 * 2**30


def chunk_rows(dim: int) -> int:
    """Encodings drawn at once at width ``dim``: :data:`CHUNK_ROWS`, fewer for wide representations."""
    return max(1, min(CHUNK_ROWS, CHUNK_BYTES // (CHUNK_BYTES_PER_VALUE * max(dim, 1))))


def memory_estimate(draws: int, dim: int) -> int:
    """Bytes an audit of ``draws`` per hypothesis at width ``dim`` holds at its peak (see the constants)."""
    return STATS_BYTES_PER_DRAW * draws + CHUNK_BYTES_PER_VALUE * chunk_rows(dim) * dim


def check_work(draws: int, dim: int, *, encodings: int = 1, claims: int = 1, memory: int | None = None) -> None:
    """One line (before any work) unless an audit of ``claims`` claims, ``draws`` per hypothesis, ``encodings``
    per trial at width ``dim`` stays within the caps and :data:`MEMORY_FRACTION` of ``memory`` (physical memory)."""
    require(4 <= draws <= MAX_DRAWS, f"--draws must be in [4, {MAX_DRAWS:,}], not {draws:,}")
    require(1 <= dim <= MAX_DIM, f"--dim must be in [1, {MAX_DIM:,}], not {dim:,}")
    values = 2 * draws * encodings * dim * claims
    require(values <= MAX_NOISE_VALUES, f"the audit would draw {values:,} noise values (2 x --draws {draws:,} x "
            f"{encodings} encoding(s) x width {dim:,}{f' x {claims} claims' if claims > 1 else ''}), above the cap "
            f"{MAX_NOISE_VALUES:,}; lower --draws or --dim")
    total = memory if memory is not None else physical_memory()
    need = memory_estimate(draws, dim)
    require(need <= MEMORY_FRACTION * total, f"--draws {draws:,} at width {dim:,} needs about {need / 2**30:.1f} GiB "
            f"of memory, more than {MEMORY_FRACTION:.0%} of this machine's {total / 2**30:.1f} GiB; lower --draws")


def epsilon_bound(fp: np.ndarray | int, fn: np.ndarray | int, n0: int, n1: int, delta: float,
                  confidence: float = CONFIDENCE) -> np.ndarray:
    """``max(0, ln((1 - delta - FNR_hi) / FPR_hi))`` for ``fp`` false positives of ``n0`` and ``fn`` misses of ``n1``."""
    _, fpr_hi = clopper_pearson(fp, n0, confidence)
    _, fnr_hi = clopper_pearson(fn, n1, confidence)
    num = 1.0 - delta - fnr_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(num > 0, np.log(np.maximum(num, 1e-300) / fpr_hi), 0.0)
    return np.maximum(val, 0.0)


def max_certifiable_epsilon(n: int, delta: float = 0.0) -> float:
    """The audit's power: the largest ``eps_lb`` that ``n`` held-out draws per hypothesis can give (no error at all)."""
    return float(epsilon_bound(0, 0, n, n, delta))


def _rates(s_pos: np.ndarray, s_neg: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false positives: ``s_neg > t``, misses: ``s_pos <= t``) for every threshold ``t``."""
    neg, pos = np.sort(s_neg), np.sort(s_pos)
    fp = len(neg) - np.searchsorted(neg, t, side="right")
    fn = np.searchsorted(pos, t, side="right")
    return fp, fn


@dataclass(frozen=True)
class AuditResult:
    """One audited claim: the empirical lower bound beside the claimed epsilon."""

    mechanism: str
    claimed_epsilon: float
    delta: float
    eps_lb: float
    draws: int  # per hypothesis (x and x'), both halves
    held_out: int  # per hypothesis, used for the bound
    threshold: float
    false_positives: int
    misses: int
    fpr_hi: float
    fnr_hi: float
    power: float  # max_certifiable_epsilon(held_out, delta)
    details: dict

    @property
    def violated(self) -> bool:
        return self.eps_lb > self.claimed_epsilon

    @property
    def verdict(self) -> str:
        if self.violated:
            return "VIOLATION: the lower bound exceeds the claimed epsilon"
        if self.claimed_epsilon >= self.power:
            return "consistent, but the claim is above the audit's power (more draws could not refute it either)"
        return "consistent with the claim"

    def to_json(self) -> dict:
        return {**asdict(self), "violated": self.violated, "verdict": self.verdict, "confidence": CONFIDENCE}


def distinguish(s_pos: np.ndarray, s_neg: np.ndarray, delta: float) -> dict:
    """Threshold distinguisher: choose ``t`` on the first half of the draws, bound epsilon on the second half."""
    require(len(s_pos) == len(s_neg) and len(s_pos) >= 4, "the audit needs at least 4 draws per hypothesis")
    h = len(s_pos) // 2
    cal_pos, cal_neg, ev_pos, ev_neg = s_pos[:h], s_neg[:h], s_pos[h:], s_neg[h:]
    cand = np.unique(np.concatenate([np.quantile(np.concatenate([cal_pos, cal_neg]), np.linspace(0, 1, 401)),
                                     np.sort(cal_neg)[-200:]]))
    fp, fn = _rates(cal_pos, cal_neg, cand)
    # a stricter bound for the choice, so that the best of ~600 thresholds is not a lucky tail of the first half
    t = float(cand[int(np.argmax(epsilon_bound(fp, fn, h, h, delta, SELECTION_CONFIDENCE)))])
    fp_e, fn_e = _rates(ev_pos, ev_neg, np.array([t]))
    n = len(ev_pos)
    eps = float(epsilon_bound(fp_e, fn_e, n, n, delta)[0])
    return {"eps_lb": eps, "threshold": t, "false_positives": int(fp_e[0]), "misses": int(fn_e[0]), "held_out": n,
            "fpr_hi": float(clopper_pearson(fp_e, n)[1][0]), "fnr_hi": float(clopper_pearson(fn_e, n)[1][0])}


def _result(name: str, claim: float, delta: float, s_pos: np.ndarray, s_neg: np.ndarray, details: dict) -> AuditResult:
    d = distinguish(s_pos, s_neg, delta)
    return AuditResult(name, float(claim), delta, d["eps_lb"], len(s_pos), d["held_out"], d["threshold"], d["false_positives"],
                       d["misses"], d["fpr_hi"], d["fnr_hi"], max_certifiable_epsilon(d["held_out"], delta), details)


# -- (epsilon, delta)-DP instance encoding ----------------------------------------
def boundary_direction(mechanism) -> torch.Tensor:
    """Unit vector ``v`` (clipping norm) maximising ``||C v - (-C v)||`` in the norm the noise is calibrated in."""
    d = mechanism.dim
    if mechanism.clip_norm == "l2" and mechanism.noise_norm == "l1":
        return torch.full((d,), 1.0 / math.sqrt(d))
    v = torch.zeros(d)
    v[0] = 1.0
    return v


def audit_encoding(calibration, *, draws: int = 100_000, rng: SecretGenerator, chunk: int | None = None,
                   progress: Callable[[int], None] | None = None) -> AuditResult:
    """Audit a calibrated DP instance encoding (:class:`~privnlu.mechanisms.dp.Calibration`) against its target epsilon.

    One trial = ``participations`` encodings of the worst-case example by the real
    :class:`~privnlu.mechanisms.dp.DPTextHide` (clip, mix with ``k = 1``, add the mechanism's noise).
    """
    from ...mechanisms.dp import DPTextHide

    mech = calibration.mechanism
    n_part = calibration.participations
    check_work(draws, mech.dim, encodings=n_part)
    chunk = chunk or chunk_rows(mech.dim)
    hider = DPTextHide(0, 1, dim=mech.dim, rng=rng, mechanism=mech)
    v = boundary_direction(mech)
    x = mech.clip * v
    u = v / v.norm()  # (x - x') / ||x - x'||_2
    step = max(1, chunk // n_part)  # trials per chunk: at most ~chunk encodings in memory at once
    stats = {}
    for sign in (1.0, -1.0):
        out = []
        for s in range(0, draws, step):
            b = min(step, draws - s)
            rows = (sign * x).expand(b * n_part, -1).contiguous()
            enc = hider.hide(rows, torch.zeros(b * n_part, 1)).x  # the real clip + noise
            out.append((enc.double() @ u.double()).view(b, n_part).sum(1).numpy())
            if progress is not None:
                progress(b)
        stats[sign] = np.concatenate(out)
    sens = mech.sensitivity
    details = {"mechanism": mech.to_json(), "calibration": calibration.calibration, "participations": n_part,
               "accounted_epsilon": calibration.epsilon, "statistic": "sum over the trial's encodings of <e, u>, "
               "u = (x - x') / ||x - x'||_2", "neighbours": f"x = C v, x' = -C v, v = {'1/sqrt(d)' if v[1:].any() else 'e_1'}"
               f" ({mech.clip_norm} norm C = {mech.clip:g}); ||x - x'||_{mech.noise_norm[-1]} = {sens:.4g}"}
    name = f"dp-{mech.kind}-{calibration.calibration}"
    return _result(name, calibration.target_epsilon, calibration.delta, stats[1.0], stats[-1.0], details)


# -- d_chi (metric DP) ----------------------------------------------------------
def pick_pairs(space, eta: float, count: int, *, target: float = 2.0, seed: int = 0) -> list[tuple[int, int]]:
    """``count`` pairs of regular tokens: a random token and the one whose ``eta d(x, x')`` is closest to ``target``
    (claims near ``target`` are within the audit's power). The choice is public (seeded), not a secret."""
    g = torch.Generator().manual_seed(seed)
    reg = space.regular_ids
    pairs = []
    for i in torch.randperm(len(reg), generator=g)[:count].tolist():
        d = torch.cdist(space.regular[i : i + 1].double(), space.regular.double())[0]
        d[i] = float("inf")
        d[d < 1e-6] = float("inf")  # duplicates of the token's embedding
        j = int(torch.argmin((eta * d - target).abs()))
        pairs.append((int(reg[i]), int(reg[j])))
    return pairs


def audit_dchi(space, eta: float, pairs: list[tuple[int, int]], *, mechanism: str = "rep", draws: int = 100_000,
               rng: SecretGenerator, sampler: Callable | None = None, chunk: int | None = None,
               progress: Callable[[int], None] | None = None) -> list[AuditResult]:
    """Audit ``eta``-d_chi for token pairs: each pair's claim is ``eta ||phi(x) - phi(x')||_2`` (delta = 0).

    ``sampler(space, ids, eta, rng)`` defaults to the real :func:`~privnlu.mechanisms.dchi.m_rep` (``rep``) or
    :func:`~privnlu.mechanisms.dchi.m_txt` (``txt``); tests pass a deliberately under-noised one.
    """
    from ...mechanisms import dchi
    from ...mechanisms.dchi_modes import mechanism as dchi_mechanism

    require_choice("d_chi mechanism", mechanism, DCHI_MECHANISMS)
    mech = dchi_mechanism(mechanism)
    dchi.check_eta(eta)
    check_work(draws, space.dim, claims=len(pairs))
    chunk = chunk or chunk_rows(space.dim)
    sampler = sampler or (dchi.m_txt if mech.sends_tokens else dchi.m_rep)
    results = []
    for a, b in pairs:
        ea, eb = space.embeddings[a].double(), space.embeddings[b].double()
        dist = float((ea - eb).norm())
        u, mid = (ea - eb) / dist, (ea + eb) / 2
        stats = {}
        for tok in (a, b):
            out = []
            for s in range(0, draws, chunk):
                n = min(chunk, draws - s)
                y = sampler(space, torch.full((n,), tok, dtype=torch.long), eta, rng)
                emb = mech.embedded(space, y)
                out.append(((emb.double() - mid) @ u).numpy())
                if progress is not None:
                    progress(n)
            stats[tok] = np.concatenate(out)
        names = (space.tokens[a], space.tokens[b]) if space.tokens else (a, b)
        details = {"tokens": list(names), "ids": [a, b], "distance": dist, "eta": eta,
                   "statistic": "<M(x) - (phi(x) + phi(x'))/2, u>, u = (phi(x) - phi(x')) / d(x, x')"
                   + (" (M_txt: embedding of the output token)" if mech.sends_tokens else "")}
        results.append(_result(f"dchi-{mechanism}", eta * dist, 0.0, stats[a], stats[b], details))
    return results


#: noise values a DP audit draws and scores per second on one thread (measured: 1,000,000 draws at width 64 in
#: 6.3 s beyond start-up on one core of a 2-core AVX2 CPU, about 2e7; rounded down)
VALUES_PER_SECOND = 15_000_000
#: an audit expected to take longer or hold more than this is announced before it starts
ANNOUNCE_SECONDS, ANNOUNCE_BYTES = 30.0, 2**30


def work_estimate(draws: int, dim: int, *, encodings: int = 1, claims: int = 1, dchi: bool = False) -> str | None:
    """One line with an audit's expected time (a DP claim; see :data:`VALUES_PER_SECOND`) and peak memory
    (:func:`memory_estimate`), or None when it is small (below :data:`ANNOUNCE_SECONDS` and
    :data:`ANNOUNCE_BYTES`)."""
    need = memory_estimate(draws, dim)
    seconds = None if dchi else 2 * draws * encodings * dim * claims / VALUES_PER_SECOND
    if need < ANNOUNCE_BYTES and (seconds is None or seconds < ANNOUNCE_SECONDS):
        return None
    took = "" if seconds is None else (f"about {seconds / 60:.0f} min on one core, " if seconds >= 90
                                       else f"about {seconds:.0f} s on one core, ")
    return (f"dp audit: {draws:,} draws per hypothesis at width {dim:,} take {took}and about "
            f"{need / 2**30:.1f} GiB of memory")


def audit_claim(scheme, *, dim: int = 64, epochs: int = 1, draws: int | None = None, pairs: int = 3,
                target_loss: float = 2.0, model: str | None = None, seed: int | None = None,
                progress: Callable[[int], None] | None = None, announce: Callable[[str], None] | None = None) -> dict:
    """The empirical audit of a scheme's claim (``privnlu dp audit``): the real DP instance encoding of ``scheme``
    (calibrated for ``epochs`` encodings per example at width ``dim``) on worst-case neighbours, or the real d_chi
    mechanism of a d_chi scheme on ``pairs`` token pairs of ``model``'s table whose claim ``eta d(x, x')`` is
    closest to ``target_loss``. Returns the record (kind ``dp-audit``); ``violated`` is True when a 95 % lower
    bound on epsilon exceeds the claim. ``seed``: EXPERIMENTS ONLY. ``announce`` is given the expected time and
    memory of a large audit (:func:`work_estimate`) before it starts."""
    from ...version import __version__

    from ...mechanisms.dchi_modes import REP, TEXT, mechanism as dchi_mechanism
    from ...schemes import DchiScheme, DPInstanceEncoding

    rng = SecretGenerator(seed, warn=False)
    dchi = isinstance(scheme, DchiScheme)  # the claims audited: eta-d_chi, and DP instance encoding's (epsilon, delta)
    mech = dchi_mechanism(scheme.mechanism) if dchi else None
    draws = draws or (20_000 if mech is not None and mech.sends_tokens else 100_000)
    require(dchi or isinstance(scheme, DPInstanceEncoding), f"scheme {scheme.name} makes no DP or d_chi claim to audit")
    check_work(draws, 1 if dchi else dim, encodings=1 if dchi else epochs, claims=pairs if dchi else 1)
    line = work_estimate(draws, 1 if dchi else dim, encodings=1 if dchi else epochs, claims=pairs if dchi else 1,
                         dchi=dchi)
    if line and announce is not None:
        announce(line)
    if dchi:
        from ...mechanisms.dchi import load_token_space

        scheme.require("eta")
        space, _ = load_token_space(model)
        chosen = pick_pairs(space, scheme.eta, pairs, target=target_loss, seed=seed if seed is not None else 0)
        mechanism = (REP if mech is REP else TEXT).audit_name
        results = audit_dchi(space, scheme.eta, chosen, mechanism=mechanism, draws=draws, rng=rng, progress=progress)
    else:
        results = [audit_encoding(scheme.calibrate(dim=dim, epochs=epochs), draws=draws, rng=rng, progress=progress)]
    return {"kind": "dp-audit", "privnlu": __version__, "scheme": scheme.name,
            "mechanism": scheme.name if dchi else scheme.mechanism, "draws_per_hypothesis": draws,
            "experiment_seed": seed, "results": [r.to_json() for r in results],
            "violated": any(r.violated for r in results)}
