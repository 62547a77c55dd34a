"""Every DP release as an immutable ``dp_accounting`` :class:`~dp_accounting.DpEvent`, and its JSON form.

privnlu's releases are compositions of one kind of step: a Gaussian or Laplace mechanism with noise multiplier ``z``
(noise over sensitivity), optionally on a Poisson sample at rate ``q``, repeated ``count`` times. The constructors
build them as ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), count)`` (no
``PoissonSampledDpEvent`` without sampling); :func:`compose` joins several into a ``ComposedDpEvent``.

JSON (:func:`event_to_json`, :func:`event_from_json`; a plain dict, nothing pickled) is the privacy ledger's event
record: ``{"kind": "gaussian" | "laplace", "noise_multiplier": z, "count": n}``, with ``"kind": "poisson-gaussian"``
(or ``"poisson-laplace"``) and ``"sample_rate": q`` for a sampled step, and ``{"kind": "composed", "events":
[...]}`` for a composition.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ..errors import PrivnluError, require

#: the leaf mechanisms an event may hold, by their JSON kind
MECHANISMS = ("gaussian", "laplace")
#: the JSON kinds of an event
KINDS = ("gaussian", "laplace", "poisson-gaussian", "poisson-laplace", "composed")
#: the most self-compositions one event may hold
MAX_COUNT = 10 ** 12


def _dp():
    import dp_accounting

    return dp_accounting


def _noise(z: Any) -> float:
    ok = isinstance(z, numbers.Real) and not isinstance(z, bool) and math.isfinite(z) and z > 0
    require(ok, f"the noise multiplier must be a finite number > 0, not {str(z)[:40]}")
    return float(z)


def _rate(q: Any) -> float:
    ok = isinstance(q, numbers.Real) and not isinstance(q, bool) and math.isfinite(q) and 0 < q <= 1
    require(ok, f"the sampling rate must be a number in (0, 1], not {str(q)[:40]}")
    return float(q)


def _count(n: Any) -> int:
    ok = isinstance(n, numbers.Integral) and not isinstance(n, bool) and 1 <= n <= MAX_COUNT
    require(ok, f"the number of compositions must be a whole number in [1, {MAX_COUNT:g}], not {str(n)[:40]}")
    return int(n)


def mechanism_event(kind: str, noise_multiplier: float, sampling_rate: float | None = None, steps: int = 1):
    """``steps`` compositions of a ``kind`` (gaussian or laplace) mechanism with ``noise_multiplier``, each on a
    Poisson sample at ``sampling_rate`` (``None``: no sampling)."""
    dp = _dp()
    require(kind in MECHANISMS, f"unknown noise mechanism '{str(kind)[:40]}'; choose one of {', '.join(MECHANISMS)}")
    z = _noise(noise_multiplier)
    base = dp.GaussianDpEvent(z) if kind == "gaussian" else dp.LaplaceDpEvent(z)
    if sampling_rate is not None:
        base = dp.PoissonSampledDpEvent(_rate(sampling_rate), base)
    return dp.SelfComposedDpEvent(base, _count(steps))


def gaussian_event(noise_multiplier: float, sampling_rate: float | None = None, steps: int = 1):
    """``steps`` Gaussian mechanisms with ``noise_multiplier``, Poisson-sampled at ``sampling_rate`` if given
    (DP-SGD's steps, DP-FedSGD's rounds, DP instance encoding's encodings)."""
    return mechanism_event("gaussian", noise_multiplier, sampling_rate, steps)


def laplace_event(noise_multiplier: float, sampling_rate: float | None = None, steps: int = 1):
    """``steps`` Laplace mechanisms with ``noise_multiplier`` (scale over L1 sensitivity), Poisson-sampled at
    ``sampling_rate`` if given."""
    return mechanism_event("laplace", noise_multiplier, sampling_rate, steps)


def compose(events: list) -> Any:
    """The composition of ``events`` (a ``ComposedDpEvent``, also of one event)."""
    require(len(events) > 0, "nothing to compose: no event")
    return _dp().ComposedDpEvent(list(events))


def leaves(event) -> list[tuple[str, float, float | None, int]]:
    """The event's steps as ``(mechanism, noise multiplier, sampling rate or None, count)``, in order; PrivnluError
    (one line) for an event privnlu does not make."""
    dp = _dp()
    if isinstance(event, dp.ComposedDpEvent):
        return [leaf for e in event.events for leaf in leaves(e)]
    count = 1
    if isinstance(event, dp.SelfComposedDpEvent):
        event, count = event.event, _count(event.count)
    q = None
    if isinstance(event, dp.PoissonSampledDpEvent):
        event, q = event.event, _rate(event.sampling_probability)
    if isinstance(event, dp.GaussianDpEvent):
        return [("gaussian", _noise(event.noise_multiplier), q, count)]
    if isinstance(event, dp.LaplaceDpEvent):
        return [("laplace", _noise(event.noise_multiplier), q, count)]
    raise PrivnluError(f"privnlu accounts Gaussian and Laplace steps (Poisson-sampled, composed), not "
                       f"{type(event).__name__}")


def check_event(event) -> Any:
    """The event, its every number checked (PrivnluError, one line)."""
    leaves(event)
    return event


def event_to_json(event) -> dict:
    """The event as a plain JSON dict (see the module docstring); a bare mechanism is written with ``count`` 1."""
    dp = _dp()
    if isinstance(event, dp.ComposedDpEvent):
        return {"kind": "composed", "events": [event_to_json(e) for e in event.events]}
    check = leaves(event)
    require(len(check) == 1, "an event of one step kind was expected")
    kind, z, q, n = check[0]
    if q is None:
        return {"kind": kind, "noise_multiplier": z, "count": n}
    return {"kind": f"poisson-{kind}", "noise_multiplier": z, "sample_rate": q, "count": n}


def event_from_json(d: Any) -> Any:
    """The event an :func:`event_to_json` dict describes; every field checked (PrivnluError, one line)."""
    require(isinstance(d, dict), f"a DP event is an object, not {type(d).__name__}")
    kind = d.get("kind")
    require(kind in KINDS, f"DP event field 'kind' is {str(kind)[:40]!r}, not one of {', '.join(KINDS)}")
    if kind == "composed":
        events = d.get("events")
        require(isinstance(events, list) and len(events) > 0, "DP event field 'events' is not a non-empty list")
        return _dp().ComposedDpEvent([event_from_json(e) for e in events])
    sampled = kind.startswith("poisson-")
    return mechanism_event(kind.removeprefix("poisson-"), d.get("noise_multiplier"),
                           _rate(d.get("sample_rate")) if sampled else None, d.get("count"))


def describe(event) -> str:
    """The event in words (for messages)."""
    parts = []
    for kind, z, q, n in leaves(event):
        sampled = f", Poisson-sampled at q = {q:.4g}" if q is not None else ""
        parts.append(f"{n} x {kind} (noise multiplier {z:.4g}{sampled})")
    return " + ".join(parts)


def loss_scale(event) -> float:
    """How the privacy-loss range grows with the event's noise: the largest of ``1/z^2`` (Gaussian) and ``1/z``
    (Laplace) over its steps (the PLD accountant widens its grid by it)."""
    return max((z ** -2 if kind == "gaussian" else 1 / z) for kind, z, _, _ in leaves(event))
