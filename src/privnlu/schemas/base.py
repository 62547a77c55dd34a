"""The building blocks of the file schemas: field types that say what they want in plain words, and one function,
:func:`validate`, that turns the first problem into one line naming the file and the field.

Every type here is strict: a number written as a string, ``true`` where an integer belongs, ``4.5`` where an
integer belongs, ``NaN`` where a finite number belongs, are refused, never coerced.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.functional_validators import PlainValidator
from pydantic_core import PydanticCustomError

from ..errors import PrivnluError

M = TypeVar("M", bound=BaseModel)


class FieldError(PrivnluError):
    """A value that breaks a rule across fields (a tensor's shape against the metadata): where, and what."""

    def __init__(self, loc: str, message: str) -> None:
        super().__init__(f"field '{loc}': {message}")
        self.loc, self.message = loc, message


class Schema(BaseModel):
    """A file section: known fields are checked, unknown ones are kept (newer writers may add fields)."""

    model_config = ConfigDict(extra="allow", frozen=True)


def _fail(message: str):
    return PydanticCustomError("privnlu", message)


def _range_words(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f" in [{lo:g}, {hi:g}]"
    if lo is not None:
        return f" >= {lo:g}"
    if hi is not None:
        return f" <= {hi:g}"
    return ""


def finite_number(v: Any) -> bool:
    """Whether ``v`` is a finite int or float (a bool is not a number here)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def int_field(lo: int | None = None, hi: int | None = None):
    """An integer (not a bool, not 4.0) in ``[lo, hi]``."""
    words = f"must be an integer{_range_words(lo, hi)}"

    def check(v: Any) -> int:
        if not _is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _fail(words)
        return v

    return Annotated[int, PlainValidator(check)]


def number_field(lo: float | None = None, hi: float | None = None, *, nonfinite_text: bool = False):
    """A finite number in ``[lo, hi]``; with ``nonfinite_text`` also ``"inf"``, ``"-inf"`` or ``"nan"``, the way
    :mod:`privnlu.io` writes a non-finite float."""
    words = (f"must be a number{_range_words(lo, hi)} (a non-finite one written as 'inf', '-inf' or 'nan')"
             if nonfinite_text else f"must be a finite number{_range_words(lo, hi)}")

    def check(v: Any) -> float:
        if nonfinite_text and v in ("inf", "-inf", "nan"):
            return v
        if not finite_number(v):
            raise _fail(words)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _fail(words)
        return v

    return Annotated[float, PlainValidator(check)]


#: a name that may become part of a file name or a link: letters, digits and ``. _ + -``, not starting with a dot
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}")


def _name(v: Any) -> str:
    if not isinstance(v, str) or not NAME.fullmatch(v):
        raise _fail("must be a name: letters, digits, '.', '_', '+', '-' (no '/' or spaces, no leading '.'), at "
                    "most 100 characters")
    return v


def _text(v: Any) -> str:
    if not isinstance(v, str) or len(v) > 1000 or any(ord(c) < 32 and c not in "\t" for c in v):
        raise _fail("must be a single line of text (at most 1000 characters)")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _fail("must be true or false")
    return v


def _object(v: Any) -> dict:
    if not isinstance(v, dict):
        raise _fail("must be an object")
    return v


def _list(v: Any) -> list:
    if not isinstance(v, list):
        raise _fail("must be a list")
    return v


def _m_label(v: Any) -> str | int:
    """A pool size as records and payloads write it: ``"inf"`` or a non-negative integer (text or number)."""
    ok = (_is_int(v) and v >= 0) or (isinstance(v, str) and (v == "inf" or (v.isdigit() and v.isascii())))
    if not ok:
        raise _fail("must be a pool size: a non-negative integer or 'inf'")
    return v


Name = Annotated[str, PlainValidator(_name)]
Text = Annotated[str, PlainValidator(_text)]
Bool = Annotated[bool, PlainValidator(_bool)]
Object = Annotated[dict, PlainValidator(_object)]
List = Annotated[list, PlainValidator(_list)]
MLabel = Annotated[str, PlainValidator(_m_label)]


def _loc(parts: tuple) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out


_WORDS = {"missing": "is missing", "model_type": "must be an object", "dict_type": "must be an object",
          "list_type": "must be a list", "tuple_type": "must be a list", "string_type": "must be a string",
          "bool_type": "must be true or false", "int_type": "must be an integer", "float_type": "must be a number",
          "extra_forbidden": "is not a field of this file"}


def first_error(exc: ValidationError) -> tuple[str, str]:
    """``(field, message)`` of a validation error's first problem, in the words of this module."""
    err = exc.errors(include_url=False)[0]
    msg = _WORDS.get(err["type"]) or (err["msg"][0].lower() + err["msg"][1:]).replace("input should be", "must be")
    return _loc(tuple(err["loc"])), msg


def validate(model: type[M], data: Any, *, file: object) -> M:
    """``model`` validated from ``data``; the first problem raises :class:`PrivnluError` as one line:
    ``FILE: field 'k': must be an integer >= 1``."""
    try:
        obj = model.model_validate(data)
        check = getattr(obj, "check", None)
        if check is not None:
            check()
        return obj
    except ValidationError as exc:
        loc, msg = first_error(exc)
        raise PrivnluError(f"{file}: field '{loc}': {msg}" if loc else f"{file}: {msg}") from None
    except FieldError as exc:
        raise PrivnluError(f"{file}: {exc}") from None
