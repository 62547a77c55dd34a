"""The registry of privacy schemes: one canonical name each, old names accepted for one release.

``register`` adds a scheme class; :func:`get` finds it by canonical name or deprecated alias (one notice per alias
per process); :func:`create` builds one with its parameters; :func:`from_record` reads the scheme back from a
results record, a model's ``privnlu.json`` privacy block or an audit point, in the current or the earlier format.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, TypeVar

from ..errors import PrivnluError
from ..params import Option
from .base import Scheme

S = TypeVar("S", bound=type[Scheme])

SCHEMES: dict[str, type[Scheme]] = {}
ALIASES: dict[str, str] = {}
_warned: set[str] = set()


def register(cls: S) -> S:
    """Class decorator: add a scheme (its ``name`` and ``aliases``) to the registry."""
    if not cls.name or cls.name in SCHEMES or cls.name in ALIASES:
        raise ValueError(f"scheme name {cls.name!r} is empty or taken")
    SCHEMES[cls.name] = cls
    for alias in cls.aliases:
        ALIASES[alias] = cls.name
    return cls


def unregister(cls: type[Scheme]) -> None:
    """Remove a scheme (and its aliases) from the registry."""
    if SCHEMES.get(cls.name) is cls:
        del SCHEMES[cls.name]
    for alias in cls.aliases:
        if ALIASES.get(alias) == cls.name:
            del ALIASES[alias]


@contextmanager
def registered(cls: S) -> Iterator[S]:
    """A scheme in the registry for the ``with`` block only (a plug-in, or a test's scheme)."""
    register(cls)
    try:
        yield cls
    finally:
        unregister(cls)


def names() -> tuple[str, ...]:
    """The canonical names, in registration order."""
    return tuple(SCHEMES)


def canonical(name: str, *, warn: bool = True) -> str:
    """The canonical name of ``name``; an old name prints one deprecation line (once per process)."""
    if name in SCHEMES:
        return name
    if name in ALIASES:
        new = ALIASES[name]
        if warn and name not in _warned:
            _warned.add(name)
            sys.stderr.write(f"privnlu: scheme '{name}' is deprecated and will be removed in the next release; "
                             f"use '{new}'\n")
        return new
    raise PrivnluError(f"unknown scheme '{name}'; choose one of {', '.join(SCHEMES)}")


def get(name: str, *, warn: bool = True) -> type[Scheme]:
    """The scheme class for a canonical name or an old one."""
    return SCHEMES[canonical(name, warn=warn)]


def create(name: str, **params: Any) -> Scheme:
    """A scheme with ``params``; parameters left out (or None) take the scheme's defaults; unknown ones are refused."""
    cls = get(name)
    known = {o.dest for o in cls.options()}
    unknown = sorted(k for k, v in params.items() if k not in known and v is not None)
    if unknown:
        raise PrivnluError(f"scheme {cls.name} takes no {', '.join(unknown)}")
    return cls(**{k: v for k, v in params.items() if k in known and v is not None})


def options(schemes: tuple[str, ...] | None = None) -> tuple[Option, ...]:
    """Every parameter of ``schemes`` (default: all) once (shared ones such as ``--m`` and ``--k`` once, with the
    first scheme's help); the command line's default is None, so each scheme applies its own (stated in the help)."""
    seen: dict[str, Option] = {}
    defaults: dict[str, list[str]] = {}
    for cls in (SCHEMES[n] for n in (schemes or tuple(SCHEMES))):
        for o in cls.options():
            seen.setdefault(o.dest, o)
            if o.default is not None and o.kind != "flag":
                defaults.setdefault(o.dest, []).append(f"{o.default!s} with {cls.name}")
    out = []
    for dest, o in seen.items():
        said = "; default: " + ", ".join(defaults[dest]) if dest in defaults else ""
        out.append(o.but(default=None if o.kind != "flag" else False, help=o.help + said))
    return tuple(out)


def for_finetune_mode(mode: str) -> type[Scheme]:
    """The scheme of a fine-tuning mode of Qu et al.'s Table 4 (``null`` is no privacy; ``privnlu dchi finetune``)."""
    for cls in SCHEMES.values():
        if cls.finetune_mode == mode:
            return cls
    raise PrivnluError(f"unknown fine-tuning mode '{mode}'")


def record_name(record: dict) -> str:
    """The registry name of the scheme a results record (or its ``spec``) names: records written before the
    registry say ``dp``, or ``texthide`` with an ``inter`` field."""
    point = record.get("point") or {}
    name = str(record.get("scheme") or point.get("scheme") or "none")
    legacy = {"texthide": "texthide-inter" if record.get("inter") else "texthide",
              "dp": "dp-ie", "texthide-intra": "texthide", "dchi": str(record.get("variant"))}
    return legacy.get(name, name)


def from_record(record: dict) -> Scheme:
    """The scheme of a results record (``train``, ``audit``), a ``privnlu.json`` privacy block or a federated
    config; records written before the registry name the scheme ``dp``/``texthide`` with ``inter`` and ``dp``
    fields, which are read here and nowhere else."""
    if isinstance(record.get("scheme"), dict):  # {"name": ..., params}
        params = dict(record["scheme"])
        return create(params.pop("name"), **params)
    point = record.get("point") or {}
    cls = get(record_name(record), warn=False)
    fields_ = {o.dest for o in cls.options()}
    params = {k: record.get(k, point.get(k)) for k in ("m", "k", "eta") if k in fields_}
    if "inter" in fields_:
        params["inter"] = bool(record.get("inter"))
    dp = record.get("dp") or (record.get("spec") or {}).get("dp")
    if "epsilon" in fields_:
        if dp:
            params.update(mechanism=dp.get("mechanism"), epsilon=dp.get("target_epsilon", dp.get("epsilon")),
                          delta=dp.get("delta"), clip=dp.get("clip"), calibration=dp.get("calibration"))
            if "noisy_queries" in dp or "noisy_queries" in record:
                params["clean_queries"] = not bool(dp.get("noisy_queries", record.get("noisy_queries")))
        elif point.get("epsilon") is not None:
            params["epsilon"] = point["epsilon"]
    return cls(**{k: v for k, v in params.items() if v is not None and k in fields_})  # only what it declares
