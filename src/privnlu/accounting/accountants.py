"""Privacy accountants behind one small interface (:class:`Accountant`), by name (:func:`create_accountant`).

* ``pld`` (default): dp-accounting's privacy loss distribution accountant, pessimistic estimate; where no PLD can be
  built (noise so small that the loss range overflows) the RDP bound answers instead. Options: ``interval`` (the
  discretisation, widened by ``max(1, loss_scale)``) and ``loss_scale`` (default: :func:`.events.loss_scale`).
* ``rdp``: dp-accounting's RDP accountant (its default orders).
* ``pure-dp``: basic composition of Laplace mechanisms, ``sum count / z`` (no sampling).
* ``tightest``: the smallest of the sound bounds for one self-composed Gaussian or Laplace mechanism, in bounded time
  and memory for any count: RDP; for the Laplace pure DP, and the PLD where it is cheap; for the Gaussian the PLD
  (closed form in the count). Option ``pld=False`` skips the PLD (a quick, looser bound).
* ``opacus-prv``, ``opacus-rdp``: Opacus's PRV and RDP accountants over Poisson-sampled Gaussian steps, as DP-SGD
  trains with them; their calibration is Opacus's own search (``get_noise_multiplier``). ``opacus-prv`` takes
  ``max_points``: where Opacus's default mesh would need more points, a coarser mesh that fits and its *lower* bound
  (a check that never refuses a finer accounting).
"""

from __future__ import annotations

import functools
import math
import warnings
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar

from ..errors import PrivnluError, require
from .events import leaves, loss_scale

#: the Laplace PLD is used only for at most this many compositions and a composed loss distribution of at most
#: PLD_MAX_POINTS points (time and memory bounded); beyond, the RDP and pure-DP bounds (closed form in n) answer,
#: and they are as tight there
PLD_MAX_POINTS = 2_000_000
LAPLACE_PLD_MAX_COMPOSITIONS = 100_000
#: Opacus's default error of the PRV accountant's epsilon (``PRVAccountant.get_epsilon``)
PRV_EPS_ERROR = 0.01
#: arithmetic failures of the libraries, reported in one line
NUMERIC_ERRORS = (OverflowError, ZeroDivisionError, ValueError, FloatingPointError, MemoryError)


class Accountant(ABC):
    """Epsilon at ``delta`` of a DP event; the noise multiplier for a target epsilon (:meth:`noise_for`)."""

    name: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        self.options = options

    @abstractmethod
    def epsilon(self, event, delta: float) -> float:
        """Epsilon at ``delta`` of ``event`` (a sound upper bound unless the accountant says otherwise)."""

    def noise_for(self, target_epsilon: float, delta: float, make_event: Callable[[float], Any], *,
                  start: float | None = None, lo: float | None = None, hi: float | None = None, rtol: float = 1e-3,
                  min_raise: float = 1e-6) -> float:
        """The noise multiplier ``z`` with ``epsilon(make_event(z)) <= target_epsilon``: from ``start`` raised by the
        accountant's excess until within the target (at most 30 times), or the smallest ``z`` in ``[lo, hi]`` to a
        relative precision ``rtol`` by bisection in ``log z`` (``epsilon(make_event(hi))`` must be within the
        target)."""
        def eps_at(z: float) -> float:
            return self.epsilon(make_event(z), delta)

        if start is not None:
            z = start
            for _ in range(30):
                spent = eps_at(z)
                if spent <= target_epsilon:
                    return z
                z *= 1 + max(spent / target_epsilon - 1, min_raise)
            raise PrivnluError(f"no noise multiplier reaches epsilon = {target_epsilon:g} at delta = {delta:g} "
                               f"with the {self.name} accountant")
        require(lo is not None and hi is not None and 0 < lo <= hi, "noise_for needs start, or 0 < lo <= hi")
        assert lo is not None and hi is not None
        if eps_at(lo) <= target_epsilon:
            return lo
        while hi / lo > 1 + rtol:
            mid = math.sqrt(lo * hi)
            if eps_at(mid) <= target_epsilon:
                hi = mid
            else:
                lo = mid
        return hi


_REGISTRY: dict[str, type[Accountant]] = {}


def register_accountant(name: str, cls: type[Accountant] | None = None) -> Any:
    """Register an :class:`Accountant` subclass under ``name`` (usable as a class decorator)."""
    def add(c: type[Accountant]) -> type[Accountant]:
        require(isinstance(c, type) and issubclass(c, Accountant), f"{c!r} is not an Accountant")
        c.name = name
        _REGISTRY[name] = c
        return c

    return add(cls) if cls is not None else add


def accountant_names() -> tuple[str, ...]:
    """The registered accountants' names."""
    return tuple(_REGISTRY)


def create_accountant(name: str, **options: Any) -> Accountant:
    """The accountant registered as ``name`` with ``options``; PrivnluError (one line) for an unknown name."""
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise PrivnluError(f"unknown accountant '{str(name)[:40]}'; choose one of {', '.join(_REGISTRY)}")
    return cls(**options)


# -- dp-accounting -----------------------------------------------------------------------------------------------

@register_accountant("rdp")
class RdpAccountant(Accountant):
    """dp-accounting's RDP accountant."""

    def epsilon(self, event, delta: float) -> float:
        import dp_accounting

        acc = dp_accounting.rdp.RdpAccountant()
        acc.compose(event)
        return float(acc.get_epsilon(delta))


@register_accountant("pld")
class PldAccountant(Accountant):
    """dp-accounting's PLD accountant (pessimistic estimate), RDP where no PLD can be built."""

    def epsilon(self, event, delta: float) -> float:
        from dp_accounting.pld import PLDAccountant

        interval = self.options.get("interval", 1e-4)
        scale = self.options.get("loss_scale")
        scale = loss_scale(event) if scale is None else scale
        try:
            acc = PLDAccountant(value_discretization_interval=interval * max(1.0, scale))
            acc.compose(event)
            return float(acc.get_epsilon(delta))
        except (OverflowError, MemoryError, ValueError):  # noise so small that the PLD cannot be built: RDP bound
            return RdpAccountant().epsilon(event, delta)


@register_accountant("pure-dp")
class PureDpAccountant(Accountant):
    """Basic composition of pure-DP Laplace mechanisms: ``sum count / z``."""

    def epsilon(self, event, delta: float) -> float:
        steps = leaves(event)
        require(all(k == "laplace" and q is None for k, _, q, _ in steps),
                "the pure-dp accountant composes Laplace mechanisms without sampling only")
        return sum(n / z for _, z, _, n in steps)


@register_accountant("tightest")
class TightestAccountant(Accountant):
    """The smallest sound bound for one self-composed Gaussian or Laplace mechanism (see the module docstring)."""

    def epsilon(self, event, delta: float) -> float:
        steps = leaves(event)
        require(len(steps) == 1 and steps[0][2] is None,
                "the tightest accountant takes one self-composed Gaussian or Laplace mechanism without sampling")
        kind, z, _, n = steps[0]
        return _tightest(kind, z, n, delta, bool(self.options.get("pld", True)))


@functools.lru_cache(maxsize=1024)
def _tightest(kind: str, z: float, n: int, delta: float, pld: bool) -> float:
    from .events import mechanism_event

    event = mechanism_event(kind, z, None, n)
    bounds = []
    try:
        bounds.append(RdpAccountant().epsilon(event, delta))
    except (OverflowError, ValueError, ZeroDivisionError):
        pass
    if kind == "laplace":
        bounds.append(n / z)
        bound = min(bounds)
        interval = 1e-3 * min(1.0, bound)
        if not pld or interval <= 0:
            return bound
        # PLD only where it is cheap and can be tighter: few compositions, a coarse enough grid per mechanism
        # (each Laplace's loss lies in [-1/z, 1/z]) and a composed distribution of bounded size
        points = min(n * 2.0 / z, 3.0 * bound + 20.0) / interval
        if n <= LAPLACE_PLD_MAX_COMPOSITIONS and 2.0 / z / interval <= 1e4 and points <= PLD_MAX_POINTS:
            bounds.append(PldAccountant(interval=interval, loss_scale=1.0).epsilon(event, delta))
    elif pld:  # the Gaussian PLD composes in closed form: any n
        interval = 1e-3 * min(1.0, max(min(bounds, default=1.0), 1e-9))
        bounds.append(PldAccountant(interval=interval, loss_scale=z ** -2).epsilon(event, delta))
    finite = [b for b in bounds if math.isfinite(b)]
    return min(finite) if finite else math.inf


# -- Opacus --------------------------------------------------------------------------------------------------------

class OpacusAccountant(Accountant):
    """Opacus's accountant ``method`` over the event's Poisson-sampled Gaussian steps (Opacus's history)."""

    method: ClassVar[str] = ""

    @staticmethod
    def history(event) -> list[tuple[float, float, int]]:
        """Opacus's history of the event: ``(noise multiplier, sampling rate, steps)`` per step kind."""
        steps = leaves(event)
        require(all(k == "gaussian" for k, _, _, _ in steps), "Opacus accounts Gaussian steps only")
        return [(z, 1.0 if q is None else q, n) for _, z, q, n in steps]

    def _accountant(self, event):
        _require_opacus(self.name)
        from opacus.accountants import create_accountant as opacus_accountant

        acc = opacus_accountant(self.method)
        acc.history = self.history(event)
        return acc

    def epsilon(self, event, delta: float) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the PRV accountant's log(1 - q) at q = 1
            return float(self._accountant(event).get_epsilon(delta))

    def noise_for(self, target_epsilon: float, delta: float, make_event: Callable[[float], Any], **_: Any) -> float:
        """Opacus's own search (``get_noise_multiplier``, to 0.01 in epsilon) for one kind of Poisson-sampled step."""
        _require_opacus(self.name)
        from opacus.accountants.utils import get_noise_multiplier

        history = self.history(make_event(1.0))
        require(len(history) == 1, "Opacus calibrates one kind of step")
        _, q, steps = history[0]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(get_noise_multiplier(target_epsilon=target_epsilon, target_delta=delta, sample_rate=q,
                                                  steps=steps, accountant=self.method))
        except ValueError as exc:
            raise PrivnluError(f"no noise multiplier reaches epsilon = {target_epsilon:g} at delta = {delta:g} "
                               f"({exc})") from None


def _require_opacus(name: str) -> None:
    try:
        import opacus  # noqa: F401
    except ImportError:
        raise PrivnluError(f"the {name} accountant needs Opacus, which is not installed (pip install opacus)") from None


@register_accountant("opacus-rdp")
class OpacusRdpAccountant(OpacusAccountant):
    """Opacus's RDP accountant."""

    method = "rdp"


@register_accountant("opacus-prv")
class OpacusPrvAccountant(OpacusAccountant):
    """Opacus's PRV accountant (upper bound); with ``max_points``, a coarser mesh's lower bound where the default
    mesh would not fit (see the module docstring)."""

    method = "prv"

    def epsilon(self, event, delta: float) -> float:
        max_points = self.options.get("max_points")
        if max_points is None:
            return super().epsilon(event, delta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the PRV accountant's log(1 - q) at q = 1
            acc = self._accountant(event)
            eps_error = prv_error(acc.history, delta, max_points)
            if eps_error > PRV_EPS_ERROR:  # a coarser mesh: its lower bound, never above the true epsilon
                delta_error = delta / 1000
                dprv = acc._get_dprv(eps_error=eps_error, delta_error=delta_error)
                return float(dprv.compute_epsilon(delta, delta_error, eps_error)[0])
            return float(acc.get_epsilon(delta))


def prv_points(history: list[tuple[float, float, int]], delta: float, eps_error: float) -> float:
    """Points of Opacus's PRV discretised domain for ``history`` (its own domain and mesh, computed before any
    allocation)."""
    from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV, compute_safe_domain_size

    delta_error = delta / 1000  # Opacus's default in PRVAccountant.get_epsilon
    prvs = [PoissonSubsampledGaussianPRV(q, z) for z, q, _ in history]
    counts = [n for _, _, n in history]
    size = compute_safe_domain_size(prvs=prvs, max_self_compositions=counts, eps_error=eps_error,
                                    delta_error=delta_error)
    total = sum(counts)
    return 2 * size / (eps_error / math.sqrt(total * math.log(12 / delta_error) / 2))


def prv_error(history: list[tuple[float, float, int]], delta: float, max_points: float) -> float:
    """Opacus's epsilon error where its discretisation fits ``max_points`` points, else the smallest coarser error
    that fits; PrivnluError (one line) if none does."""
    eps_error = PRV_EPS_ERROR
    for _ in range(4):
        points = prv_points(history, delta, eps_error)
        if points <= max_points:
            return eps_error
        eps_error *= 1.2 * points / max_points
    raise PrivnluError(f"the PRV accountant would need {points:.3g} points, more than {max_points:g}")


def epsilon(event, delta: float, accountant: str | Accountant = "pld", **options: Any) -> float:
    """Epsilon at ``delta`` of ``event`` with the accountant registered as ``accountant`` (or an
    :class:`Accountant`); PrivnluError (one line) for a bad parameter or a computation that fails."""
    acc = accountant if isinstance(accountant, Accountant) else create_accountant(accountant, **options)
    _check_delta(delta)
    leaves(event)
    try:
        return acc.epsilon(event, delta)
    except NUMERIC_ERRORS as exc:
        raise PrivnluError(f"the {acc.name} accountant cannot account this event at delta {delta:g} "
                           f"({_why(exc)})") from None


def noise_for(target_epsilon: float, delta: float, make_event: Callable[[float], Any],
              accountant: str | Accountant = "pld", *, start: float | None = None, lo: float | None = None,
              hi: float | None = None, rtol: float = 1e-3, min_raise: float = 1e-6, **options: Any) -> float:
    """The noise multiplier ``z`` for which ``make_event(z)`` is ``(target_epsilon, delta)``-DP by the accountant
    (:meth:`Accountant.noise_for`: raised from ``start``, bisection in ``[lo, hi]``, or the library's own search)."""
    require(isinstance(target_epsilon, (int, float)) and math.isfinite(target_epsilon) and target_epsilon > 0,
            f"the target epsilon must be a finite number > 0, not {target_epsilon}")
    _check_delta(delta)
    acc = accountant if isinstance(accountant, Accountant) else create_accountant(accountant, **options)
    try:
        return acc.noise_for(target_epsilon, delta, make_event, start=start, lo=lo, hi=hi, rtol=rtol,
                             min_raise=min_raise)
    except NUMERIC_ERRORS as exc:
        raise PrivnluError(f"no noise multiplier found for epsilon = {target_epsilon:g} at delta = {delta:g} with "
                           f"the {acc.name} accountant ({_why(exc)})") from None


def analytic_gaussian_sigma(epsilon: float, delta: float) -> float:
    """The analytic Gaussian calibration (Balle & Wang 2018, ``dp_accounting.get_sigma_gaussian``): the noise
    multiplier of one Gaussian mechanism that is ``(epsilon, delta)``-DP."""
    import dp_accounting

    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


def _why(exc: BaseException) -> str:
    """A library failure in a few words."""
    if isinstance(exc, OverflowError):
        return "numerical overflow"
    if isinstance(exc, MemoryError):
        return "too large to compute"
    return " ".join(str(exc).split())[:120] or type(exc).__name__


def _check_delta(delta: Any) -> None:
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool) and math.isfinite(delta) and 0 < delta < 1
    require(ok, f"delta must be a number in (0, 1), not {str(delta)[:40]}")
