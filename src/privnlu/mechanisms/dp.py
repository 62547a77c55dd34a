"""DP instance encoding (Xie & Hong 2022), with sound sensitivity and accounting.

Each release encoding is ``e_i = sigma_i o (sum_j lambda_ij clip(x_{pi_j(i)})) + z_i``:
clip every private representation, mix and mask as TextHide does
(:class:`~privnlu.mechanisms.texthide.TextHide`), add noise ``z_i``. Masking is a
sign flip per coordinate and the noise is i.i.d. and symmetric, so adding the
noise after the mask has the same distribution as adding it before; the mask is
post-processing and plays no part in the guarantee.

**Sensitivity (replace-one).** Replacing one example ``x`` by ``x'`` changes an
encoding it takes part in by ``w (clip(x) - clip(x'))`` where ``w <= max_weight``
(<= 1, the coefficients sum to 1) is its total weight there, so

* Gaussian: clip in L2 norm to ``C``; ``Delta_2 = 2 C max_weight``;
* Laplace: clip in L1 norm to ``C``; ``Delta_1 = 2 C max_weight``. If the
  vectors are clipped in L2 instead (the paper), ``||v||_1 <= sqrt(d) ||v||_2``
  gives only ``Delta_1 = 2 C max_weight sqrt(d)``: the paper's ``2C`` is too small by
  up to ``sqrt(d)``.

**Composition.** In intra-dataset TextHide every permutation ``pi_j`` is a
bijection of the batch, so an example takes part in (at most) ``k`` encodings per
epoch (``ceil(k/2)`` for TextHide-inter), i.e. ``participations = k_private *
epochs`` mechanisms per example over the whole release. Each is a Gaussian
(Laplace) mechanism with noise multiplier ``noise / Delta``; the release is
their composition, accounted with Google's ``dp-accounting`` PLD accountant
(``SelfComposedDpEvent`` of ``GaussianDpEvent``/``LaplaceDpEvent``; :mod:`privnlu.accounting`). The
privacy-loss curve of these mechanisms depends only on ``noise / Delta``, so we
compose the normalised events under the accountant's ``ADD_OR_REMOVE_ONE``
relation (sensitivity 1), which with ``Delta`` the replace-one sensitivity is
exactly the replace-one guarantee.

**Calibration.** ``correct``: the Gaussian is calibrated analytically (Balle &
Wang 2018, ``dp_accounting.get_sigma_gaussian``) for the composition (a
composition of ``n`` Gaussians with multiplier ``z`` is one Gaussian with
multiplier ``z / sqrt(n)``); the Laplace by bisection over :func:`composed_epsilon`
(PLD, RDP and pure-DP bounds of ``n`` Laplace mechanisms). Either way the noise is
raised until the accounted epsilon is at most the target. ``paper``: one encoding only, as the paper's
Theorems 3 and 4 calibrate it (:func:`paper_mechanism`): Laplace scale ``2C / epsilon`` on L2-clipped vectors,
Gaussian ``sigma = C (1 + sqrt(2 ln(1/delta))) / epsilon`` (sensitivity ``C``; the reading of Theorem 4 chosen
in docs/design/dp-instance-encoding.md): **not a valid DP guarantee** for the release; privnlu then reports the epsilon the
release really has.

**Masks.** The paper's Algorithm 1 applies no sign mask: its scheme is ``m = 0`` here (``DP-IE``). With
``m > 0`` the encodings are also masked as TextHide masks them (``DP-IE + TextHide masks``, the variant privnlu
ran first); :func:`scheme_name` names the two.

**Two readings of the noise draw** (:data:`NOISE_READINGS`). ``per-encoding`` (default): a fresh ``z_i`` for
every encoding, which is what the paper's Theorems 3 and 4 analyse and what the guarantee above covers.
``per-batch``: Algorithm 1 as printed draws ``N`` once (line 7) and adds the same ``N`` to every encoding of the
batch (line 11). Then ``e_i - e_j = sigma o (mix_i - mix_j)`` for any two encodings of a batch (no mask,
``m = 0``): the difference is noise-free, so an attacker holding two encodings of one batch tells neighbouring
batches apart with certainty and **no finite epsilon holds** (:class:`Calibration` reports ``epsilon = inf``).

Only the encodings are protected: the mixed labels are released as TextHide
releases them, without noise, and are not covered by this guarantee.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import ClassVar

import torch

from .. import accounting
from ..choices import DP_CALIBRATIONS, DP_MECHANISMS, NOISE_READINGS  # noqa: F401 (re-exported)
from ..errors import PrivnluError, require, require_choice
from ..params import MAX_EPSILON, MIN_DELTA, check_dp_settings, check_privacy_params  # noqa: F401 (re-exported)
from ..rng import SecretGenerator
from .texthide import MaskPool, TextHide, check_finite

MECHANISMS = DP_MECHANISMS
CALIBRATIONS = DP_CALIBRATIONS
PAPER_EPSILONS = (0.1, 1, 2, 4, 8, 10, 15, 20)
NOT_DP = "not a valid DP guarantee"
#: how noise is drawn: a fresh vector per encoding (the theorems' reading, sound), or one vector per batch added to
#: every encoding of it (Algorithm 1 as printed, lines 7 and 11; not DP: see the module docstring)
PER_BATCH_NOT_DP = ("NOT DP: one noise vector per batch (Algorithm 1 as printed) cancels in the difference of any "
                    "two encodings of the batch, so no finite epsilon holds")


#: limits of what privnlu calibrates and accounts (docs/design/dp-instance-encoding.md): above MAX_EPSILON a guarantee
#: means nothing; below MIN_DELTA the accountant's truncated tail mass exceeds delta; MAX_PARTICIPATIONS keeps the
#: numbers meaningful (the RDP/closed-form bounds answer any count in milliseconds)
MAX_PARTICIPATIONS = 10 ** 9
#: the Laplace PLD's limits (:mod:`privnlu.accounting`'s ``tightest`` accountant)
PLD_MAX_POINTS = accounting.accountants.PLD_MAX_POINTS
LAPLACE_PLD_MAX_COMPOSITIONS = accounting.accountants.LAPLACE_PLD_MAX_COMPOSITIONS


def clip_rows(x: torch.Tensor, clip: float, norm: str) -> torch.Tensor:
    """``x_i * min(1, C / ||x_i||_p)`` for ``p`` = 1 or 2: every row has norm <= C afterwards.

    The norm is computed overflow-safely, as ``s ||x_i / s||_p`` with ``s = max_t |x_it|`` in float64, so a row
    whose squared entries overflow float32 (entries around 1e19) is scaled down, not zeroed.
    """
    p = {"l1": 1, "l2": 2}[norm]
    x64 = x.detach().double() if not x.requires_grad else x.double()
    s = x64.abs().amax(dim=1, keepdim=True).clamp_min(1e-300)
    n = s * torch.linalg.vector_norm(x64 / s, ord=p, dim=1, keepdim=True)
    factor = torch.clamp(clip / n.clamp_min(1e-12), max=1.0)
    return x * factor.to(x.dtype)


@dataclass(frozen=True)
class EncodingMechanism:
    """Clip + noise for one encoding; declares the norm it clips in and the sensitivity it assumes.

    ``noise`` is the Gaussian standard deviation or the Laplace scale ``b``.
    ``sensitivity`` is the true replace-one sensitivity of one encoding in the
    norm the noise needs (L2 for Gaussian, L1 for Laplace).
    """

    clip: float
    noise: float
    dim: int
    clip_norm: str
    max_weight: float = 1.0

    kind: ClassVar[str] = ""
    noise_norm: ClassVar[str] = ""  # the norm whose sensitivity calibrates this noise

    def __post_init__(self) -> None:
        require(math.isfinite(self.clip) and self.clip > 0, f"the clipping bound C must be > 0, not {self.clip}")
        require(math.isfinite(self.noise) and self.noise > 0, f"the noise scale must be > 0, not {self.noise}")
        require(self.clip_norm in ("l1", "l2"), f"clip norm must be l1 or l2, not {self.clip_norm}")
        require(0 < self.max_weight <= 1, f"max_weight must be in (0, 1], not {self.max_weight}")
        require(self.dim >= 1, "dim must be >= 1")

    @property
    def sensitivity(self) -> float:
        """Replace-one sensitivity of one encoding in :attr:`noise_norm`."""
        base = 2.0 * self.clip * self.max_weight
        if self.noise_norm == "l1" and self.clip_norm == "l2":
            return base * math.sqrt(self.dim)  # ||v||_1 <= sqrt(d) ||v||_2
        if self.noise_norm == "l2" and self.clip_norm == "l1":
            return base  # ||v||_2 <= ||v||_1
        return base

    @property
    def noise_multiplier(self) -> float:
        return self.noise / self.sensitivity

    def clip_rows(self, x: torch.Tensor) -> torch.Tensor:
        return clip_rows(x, self.clip, self.clip_norm)

    def dp_event(self):  # -> dp_accounting.DpEvent
        """One encoding's DP event (:mod:`privnlu.accounting`)."""
        raise NotImplementedError

    def sample(self, shape: tuple[int, ...], rng: SecretGenerator) -> torch.Tensor:
        raise NotImplementedError

    def to_json(self) -> dict:
        return {"mechanism": self.kind, **asdict(self), "noise_norm": self.noise_norm, "sensitivity": self.sensitivity,
                "noise_multiplier": self.noise_multiplier}


@dataclass(frozen=True)
class GaussianEncoding(EncodingMechanism):
    """``z ~ N(0, noise^2 I)``; the guarantee needs L2 sensitivity (clip in L2)."""

    clip_norm: str = "l2"
    kind: ClassVar[str] = "gaussian"
    noise_norm: ClassVar[str] = "l2"

    def dp_event(self):
        return accounting.gaussian_event(self.noise_multiplier)

    def sample(self, shape: tuple[int, ...], rng: SecretGenerator) -> torch.Tensor:
        return rng.normal(shape) * self.noise


@dataclass(frozen=True)
class LaplaceEncoding(EncodingMechanism):
    """``z_t ~ Laplace(0, noise)`` i.i.d.; the guarantee needs L1 sensitivity (clip in L1)."""

    clip_norm: str = "l1"
    kind: ClassVar[str] = "laplace"
    noise_norm: ClassVar[str] = "l1"

    def dp_event(self):
        return accounting.laplace_event(self.noise_multiplier)

    def sample(self, shape: tuple[int, ...], rng: SecretGenerator) -> torch.Tensor:
        """Inverse CDF: ``-b sign(u - 1/2) log(1 - 2|u - 1/2|)`` for ``u`` uniform on (0, 1)."""
        u = rng.uniform(shape, dtype=torch.float64) - 0.5
        return (-self.noise * torch.sign(u) * torch.log1p(-2 * u.abs())).float()


def make_mechanism(kind: str, **kw) -> EncodingMechanism:
    require_choice("mechanism", kind, MECHANISMS)
    return (GaussianEncoding if kind == "gaussian" else LaplaceEncoding)(**kw)


def mechanism_from_json(d: dict) -> EncodingMechanism:
    """The mechanism a :meth:`EncodingMechanism.to_json` describes (its public parameters: what an attacker knows)."""
    return make_mechanism(d["mechanism"], clip=d["clip"], noise=d["noise"], dim=d["dim"], clip_norm=d["clip_norm"],
                          max_weight=d.get("max_weight", 1.0))


def pld_epsilon(event, delta: float, *, loss_scale: float = 1.0, interval: float = 1e-4) -> float:
    """Epsilon at ``delta`` of a ``dp_accounting`` event by the PLD accountant, or the (also sound) RDP bound if no
    PLD can be built (:mod:`privnlu.accounting`'s ``pld`` accountant).

    The privacy-loss range grows like ``loss_scale`` (1/z^2 for a Gaussian, 1/z for a Laplace with noise multiplier
    z); the discretisation ``interval`` is widened by ``max(1, loss_scale)`` so that the PLD stays small at tiny
    noise instead of exhausting memory (the estimate stays pessimistic, i.e. an upper bound).
    """
    return accounting.epsilon(event, delta, "pld", interval=interval, loss_scale=loss_scale)


def account(mechanism: EncodingMechanism, participations: int, delta: float) -> float:
    """Epsilon at ``delta`` of ``participations`` compositions of the mechanism: :func:`composed_epsilon`."""
    return composed_epsilon(mechanism.kind, mechanism.noise_multiplier, participations, delta)


def composed_epsilon(kind: str, z: float, n: int, delta: float, *, pld: bool = True) -> float:
    """A sound upper bound on the epsilon at ``delta`` of ``n`` compositions of a Gaussian (Laplace) mechanism with
    noise multiplier ``z``, in bounded time and memory for any ``n`` and ``z``: the smallest of

    * the PLD accountant (dp-accounting, pessimistic estimate, discretisation interval ``1e-3``, or
      ``epsilon / 1000`` when the answer is below 1): always for the Gaussian (whose PLD composes in closed form),
      for the Laplace only where it is cheap (see :data:`LAPLACE_PLD_MAX_COMPOSITIONS`, :data:`PLD_MAX_POINTS`);
    * the RDP accountant (closed form in ``n``);
    * for the Laplace, pure-DP composition ``n / z``.

    ``pld=False`` skips the PLD (a quick, looser bound: calibration brackets with it first).
    """
    require(1 <= n <= MAX_PARTICIPATIONS, f"participations must be in [1, {MAX_PARTICIPATIONS:g}], not {n}")
    require(MIN_DELTA <= delta < 1, f"delta must be in [{MIN_DELTA:g}, 1), not {delta}")
    require(math.isfinite(z) and z > 0, f"the noise multiplier must be > 0, not {z}")
    return accounting.epsilon(accounting.mechanism_event(kind, z, None, n), delta, "tightest", pld=pld)


@dataclass(frozen=True)
class Calibration:
    """A calibrated mechanism and what it guarantees for the whole release."""

    mechanism: EncodingMechanism
    participations: int
    target_epsilon: float
    delta: float
    calibration: str
    epsilon: float  # what the release actually guarantees per example (accounted); inf for the per-batch reading
    noise_reading: str = "per-encoding"  # :data:`NOISE_READINGS`

    @property
    def valid(self) -> bool:
        return self.calibration == "correct" and math.isfinite(self.epsilon) and self.epsilon <= self.target_epsilon

    @property
    def per_encoding_epsilon(self) -> float:
        """The epsilon the same noise would give with a fresh draw per encoding (the per-encoding reading)."""
        if self.noise_reading != "per-batch":
            return self.epsilon
        return account(self.mechanism, self.participations, self.delta)

    def to_json(self) -> dict:
        if self.noise_reading == "per-batch":
            label = (f"{PER_BATCH_NOT_DP}; with a fresh draw per encoding the same noise would give "
                     f"({self.per_encoding_epsilon:.4g}, {self.delta:g})-DP per example")
        elif self.valid:
            label = "(epsilon, delta)-DP per example for the whole release"
        else:
            label = (f"{NOT_DP}: the paper's per-encoding calibration; the release is only ({self.epsilon:.4g}, "
                     f"{self.delta:g})-DP per example")
        eps = self.epsilon if math.isfinite(self.epsilon) else None  # JSON has no infinity: null = no finite epsilon
        return {**self.mechanism.to_json(), "participations": self.participations, "target_epsilon": self.target_epsilon,
                "delta": self.delta, "calibration": self.calibration, "accounted_epsilon": eps,
                "noise_reading": self.noise_reading, "valid_dp_guarantee": self.valid, "label": label}


def participations(k: int, epochs: int, *, inter: bool = False) -> int:
    """Encodings an example takes part in: one per private slot per epoch (see the module docstring)."""
    require(k >= 1 and epochs >= 1, "k and epochs must be >= 1")
    n = (math.ceil(k / 2) if inter else k) * epochs
    require(n <= MAX_PARTICIPATIONS, f"k x epochs = {n} encodings per example is more than privnlu accounts "
                                     f"({MAX_PARTICIPATIONS:g})")
    return n


def check_noise_reading(noise: str) -> None:
    require_choice("DP noise reading", noise, NOISE_READINGS)


def calibrate(kind: str, *, epsilon: float, delta: float, clip: float, dim: int, k: int, epochs: int, inter: bool = False,
              calibration: str = "correct", max_weight: float = 1.0, noise: str = "per-encoding") -> Calibration:
    """Noise for an (epsilon, delta) target, per example over the whole release (``correct``) or per encoding (``paper``).

    ``noise="per-batch"`` (Algorithm 1 as printed) draws the same noise scale, but the release it makes is not DP:
    the calibration's epsilon is ``inf`` (module docstring).
    """
    check_dp_settings(kind, epsilon, delta, clip, calibration)
    check_noise_reading(noise)
    n = participations(k, epochs, inter=inter)
    if calibration == "paper":
        mech: EncodingMechanism = paper_mechanism(kind, epsilon=epsilon, delta=delta, clip=clip, dim=dim,
                                                  max_weight=max_weight)
        accounted = account(mech, n, delta)
    else:
        base = make_mechanism(kind, clip=clip, noise=1.0, dim=dim, max_weight=max_weight)
        z, accounted = correct_noise_multiplier(kind, epsilon, delta, n)
        mech = make_mechanism(kind, clip=clip, noise=z * base.sensitivity, dim=dim, max_weight=max_weight)
    return Calibration(mech, n, epsilon, delta, calibration, math.inf if noise == "per-batch" else accounted, noise)


def correct_noise_multiplier(kind: str, epsilon: float, delta: float, n: int) -> tuple[float, float]:
    """The noise multiplier ``z`` for which :func:`composed_epsilon` of ``n`` compositions is at most ``epsilon``,
    and that accounted epsilon (so the printed guarantee never exceeds the target).

    Gaussian: the analytic calibration of the composition (Balle & Wang 2018; ``n`` Gaussians with multiplier
    ``z`` are one with ``z / sqrt(n)``), raised by the accountant's discretisation slack where needed. Laplace:
    bisection in ``log z`` between ``1 / (2 epsilon)`` (a single Laplace already costs about ``1/z``) and the pure-DP
    value ``n / epsilon`` with the quick bounds (RDP, pure DP), then below that answer with the PLD as well, to a
    relative precision of 1e-3.
    """
    def event(z: float):
        return accounting.mechanism_event(kind, z, None, n)

    if kind == "gaussian":
        start = accounting.analytic_gaussian_sigma(epsilon, delta) * math.sqrt(n)
        try:
            z = accounting.noise_for(epsilon, delta, event, "tightest", start=start, min_raise=1e-6)
        except PrivnluError:
            raise PrivnluError(f"could not calibrate the Gaussian for epsilon {epsilon:g}, delta {delta:g}") from None
        return z, composed_epsilon(kind, z, n, delta)
    # the quick bounds first, then below that answer with the PLD as well (the PLD is at most the quick bound)
    hi = accounting.noise_for(epsilon, delta, event, "tightest", pld=False, lo=0.5 / epsilon, hi=n / epsilon)
    hi = accounting.noise_for(epsilon, delta, event, "tightest", lo=hi / 2, hi=hi)
    return hi, composed_epsilon(kind, hi, n, delta)


THEOREM4_READINGS = ("std", "variance")
#: the reading of Theorem 4 that the ``paper`` calibration uses (docs/design/dp-instance-encoding.md says why)
THEOREM4_READING = "std"


def theorem3_scale(epsilon: float, clip: float) -> float:
    """Xie & Hong 2022, Theorem 3 (Eq. 3): Laplace density ``eps/(4C) exp(-eps |x| / (2C))`` per coordinate, i.e.
    scale ``b = 2C / epsilon`` (the paper's L1 sensitivity ``2C`` on L2-clipped vectors)."""
    return 2.0 * clip / epsilon


def theorem4_sigma(epsilon: float, delta: float, clip: float, reading: str = THEOREM4_READING) -> float:
    """Xie & Hong 2022, Theorem 4: Gaussian noise with L2 sensitivity ``C``. The extracted text reads
    ``sigma^2 = (1 + sqrt(2 log(1/delta)))^2 / epsilon * C^2`` and calls it the standard deviation; two readings:

    * ``"std"`` (used): ``sigma = C (1 + sqrt(2 ln(1/delta))) / epsilon`` (the exponent of ``epsilon`` lost in
      extraction; noise scales as ``Delta / epsilon`` like every Gaussian mechanism, Theorem 2 included);
    * ``"variance"`` (literal): ``sigma = C (1 + sqrt(2 ln(1/delta))) / sqrt(epsilon)``.
    """
    require_choice("Theorem 4 reading", reading, THEOREM4_READINGS)
    base = clip * (1.0 + math.sqrt(2.0 * math.log(1.0 / delta)))
    return base / epsilon if reading == "std" else base / math.sqrt(epsilon)


def paper_mechanism(kind: str, *, epsilon: float, delta: float, clip: float, dim: int, max_weight: float = 1.0,
                    reading: str = THEOREM4_READING) -> EncodingMechanism:
    """One encoding's noise exactly as Theorems 3 and 4 calibrate it (both clip in L2): **not a valid DP guarantee**
    for the release (:func:`account` gives the epsilon it really has)."""
    if kind == "gaussian":
        return GaussianEncoding(clip=clip, noise=max_weight * theorem4_sigma(epsilon, delta, clip, reading), dim=dim,
                                max_weight=max_weight)
    return LaplaceEncoding(clip=clip, noise=max_weight * theorem3_scale(epsilon, clip), dim=dim, clip_norm="l2",
                           max_weight=max_weight)


@dataclass(frozen=True)
class DPSettings:
    """What a user asks of DP instance encoding; :meth:`calibrate` turns it into noise for a given release.

    ``clip`` is in L2 for Gaussian and L1 for Laplace (``correct``), L2 for both (``paper``).
    ``noisy_queries``: evaluation queries get the same noise (default); if False they are only clipped and
    masked, i.e. the guarantee covers the training release and queries are not protected.
    """

    mechanism: str = "gaussian"
    epsilon: float = 8.0
    delta: float = 1e-5
    clip: float = 1.0
    calibration: str = "correct"
    noisy_queries: bool = True

    def __post_init__(self) -> None:
        check_dp_settings(self.mechanism, self.epsilon, self.delta, self.clip, self.calibration)

    @property
    def label(self) -> str:
        return f"{self.mechanism}-eps{self.epsilon:g}-{self.calibration}" + ("" if self.noisy_queries else "-cleanq")

    def calibrate(self, *, dim: int, k: int, epochs: int, inter: bool = False,
                  noise: str = "per-encoding") -> Calibration:
        """The calibration for one release; ``noise`` is the reading of the draw (:data:`NOISE_READINGS`; kept out of
        the settings so that records of the per-encoding reading keep their settings)."""
        return calibrate(self.mechanism, epsilon=self.epsilon, delta=self.delta, clip=self.clip, dim=dim, k=k,
                         epochs=epochs, inter=inter, calibration=self.calibration, noise=noise)


def scheme_name(m: float) -> str:
    """``dp-ie`` for the paper's Algorithm 1 (no sign mask, ``m = 0``), ``dp-ie-masked`` with TextHide's masks."""
    return "dp-ie" if m == 0 else "dp-ie-masked"


class DPTextHide(TextHide):
    """TextHide with clipping before mixing and calibrated noise after it (see the module docstring).

    ``calibration`` (optional) records what the noise was calibrated for, so results can report it.
    ``noise``: ``per-encoding`` (a fresh draw per encoding) or ``per-batch`` (one draw per :meth:`hide` call, added
    to every encoding of the batch: Algorithm 1 as printed, **not DP**; see the module docstring).
    """

    def __init__(self, m: float, k: int, *, dim: int, rng: SecretGenerator, mechanism: EncodingMechanism,
                 public: torch.Tensor | None = None, pool: MaskPool | None = None,
                 calibration: Calibration | None = None, noisy_queries: bool = True,
                 noise: str = "per-encoding") -> None:
        check_noise_reading(noise)
        super().__init__(m, k, dim=dim, rng=rng, public=public, pool=pool)
        if mechanism.dim != dim:
            raise PrivnluError(f"the mechanism was calibrated for d = {mechanism.dim}, the representations have d = {dim}")
        if calibration is not None and calibration.noise_reading != noise:
            raise PrivnluError(f"the calibration is for {calibration.noise_reading} noise, the hider draws {noise}")
        self.mechanism = mechanism
        self.calibration = calibration
        self.noisy_queries = noisy_queries
        self.noise = noise

    @classmethod
    def from_settings(cls, settings: DPSettings, m: float, k: int, *, dim: int, rng: SecretGenerator, epochs: int,
                      public: torch.Tensor | None = None, pool: MaskPool | None = None,
                      noise: str = "per-encoding") -> "DPTextHide":
        """Calibrate ``settings`` for ``epochs`` passes (``k`` encodings per example each) and build the hider."""
        cal = settings.calibrate(dim=dim, k=k, epochs=epochs, inter=public is not None, noise=noise)
        return cls(m, k, dim=dim, rng=rng, mechanism=cal.mechanism, public=public, pool=pool, calibration=cal,
                   noisy_queries=settings.noisy_queries, noise=noise)

    def _noisy(self, x: torch.Tensor) -> torch.Tensor:
        """``x + z``: ``z`` fresh per row, or (``per-batch``) one draw broadcast to every row of ``x``."""
        shape = (1, *x.shape[1:]) if self.noise == "per-batch" else tuple(x.shape)
        return x + self.mechanism.sample(shape, self.rng).to(device=x.device, dtype=x.dtype)

    def __repr__(self) -> str:
        return f"DP{super().__repr__()[:-1]}, {self.mechanism.kind}, C={self.mechanism.clip:g}, noise={self.mechanism.noise:.4g})"

    def hide(self, x: torch.Tensor, y: torch.Tensor, *, public: torch.Tensor | None = None):
        check_finite(x, "representations")  # before clipping, before any secret is drawn
        hb = super().hide(self.mechanism.clip_rows(x), y, public=public)
        return replace(hb, x=self._noisy(hb.x))

    def mask_only(self, x: torch.Tensor) -> torch.Tensor:
        """A query's encoding at evaluation time: clip, pool mask, the same noise (unless ``noisy_queries`` is
        False), no mixing: one encoding per query."""
        q = super().mask_only(self.mechanism.clip_rows(x))
        return self._noisy(q) if self.noisy_queries else q
