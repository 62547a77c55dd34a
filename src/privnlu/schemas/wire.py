"""The wire capture (``privnlu federated --record-wire``, :mod:`privnlu.federated.wire`): the JSON header that
lists every message, and the arrays checked against it.

Each entry names its round (``-1``: a reply pulled outside a round), the client's node id, the message type and,
where the message carried arrays, the names of its arrays per record. Every floating-point array must be finite,
and every array of a client's reply (``gradients`` or ``arrays``) must have the shape of the array of the same name
in the model the server sent that round.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic.functional_validators import PlainValidator

from .base import FieldError, Schema, Text, _fail, int_field, validate

#: the records of a client's reply whose arrays mirror the model the server sent
REPLY_RECORDS = ("gradients", "arrays")


def _array_names(v: Any) -> dict[str, list[str]]:
    if not isinstance(v, dict) or not all(isinstance(r, str) and isinstance(ns, list) and
                                          all(isinstance(n, str) for n in ns) for r, ns in v.items()):
        raise _fail("must map each record name to a list of array names")
    return v


def _records(v: Any) -> dict[str, dict]:
    if not isinstance(v, dict) or not all(isinstance(r, str) and isinstance(d, dict) for r, d in v.items()):
        raise _fail("must map each record name to an object")
    return v


def _error(v: Any) -> str:
    if not isinstance(v, str):
        raise _fail("must be a string")
    return v


class WireEntry(Schema):
    """One captured message (see the module docstring)."""

    round: int_field(-1)
    node_id: int_field(0)
    type: Text
    arrays: Annotated[dict, PlainValidator(_array_names)] | None = None
    metrics: Annotated[dict, PlainValidator(_records)] | None = None
    configs: Annotated[dict, PlainValidator(_records)] | None = None
    error: Annotated[str, PlainValidator(_error)] | None = None


class WireHeader(Schema):
    """The capture's header: the messages the server sent and those it received."""

    sent: list[WireEntry]
    received: list[WireEntry]


def check_header(meta: Any, *, file: object) -> WireHeader:
    """Validate a capture's header before any array is read."""
    return validate(WireHeader, meta, file=file)


def check_arrays(sent: list[dict], received: list[dict], *, file: object) -> None:
    """Every floating-point array finite; every reply array shaped like the round's model array of its name."""
    import numpy as np

    from ..errors import PrivnluError

    models: dict[int, dict[str, tuple]] = {}
    try:
        for side, entries in (("sent", sent), ("received", received)):
            for i, e in enumerate(entries):
                for rec, arrays in (e.get("arrays") or {}).items():
                    for name, a in arrays.items():
                        where = f"{side}[{i}].arrays.{rec}.{name}"
                        if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
                            raise FieldError(where, "holds NaN or infinite values")
                        if side == "sent":
                            models.setdefault(e["round"], {}).setdefault(name, tuple(a.shape))
                        elif rec in REPLY_RECORDS and e["round"] in models:
                            want = models[e["round"]].get(name)
                            if want is None:
                                raise FieldError(where, f"no array of this name in the model sent in round {e['round']}")
                            if tuple(a.shape) != want:
                                raise FieldError(where, f"has shape {list(a.shape)}, but the model sent in round "
                                                        f"{e['round']} has {list(want)}")
    except FieldError as exc:
        raise PrivnluError(f"{file}: {exc}") from None
