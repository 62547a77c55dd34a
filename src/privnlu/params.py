"""Declared parameters: one :class:`Option` per setting, with its flag, type, range, default and help in one place.

The privacy schemes declare their parameters as options (:mod:`privnlu.schemes`), and the command line's option
catalogue (:mod:`privnlu.cli.options`) declares every other one; each command names the options it takes. A
:class:`Range` is checked as the value is parsed, so a bad number is refused before any work starts. Importing this
module is cheap (no torch): ``privnlu X --help`` builds its parser from these declarations.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

from .choices import DP_CALIBRATIONS, DP_MECHANISMS
from .errors import PrivnluError, require, require_choice
from .schemas.base import finite_number

#: a pool size of ``inf``: a fresh mask per example
INF = math.inf
#: the largest epsilon privnlu accepts (the papers use at most 20)
MAX_EPSILON = 1000.0
#: the smallest delta: below this the PLD accountant's truncated tail mass exceeds delta
MIN_DELTA = 1e-15


def fmt_number(v: object) -> str:
    """A number as a person writes it: ``8`` not ``8.0``, ``1e-05`` for small floats."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e10:
        return str(int(v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 epoch``, ``3 epochs`` (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


@dataclass(frozen=True)
class Range:
    """A closed/open interval for a number, or for every item of a comma-separated list.

    ``extra`` lists values allowed outside the interval (e.g. ``-1`` = all), with ``note`` saying what they mean.
    """

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    items: bool = False  # a comma-separated list of such numbers
    empty_ok: bool = False  # a list may be empty (means the default)
    inf_ok: bool = False  # 'inf' is a legal value (pool size m)
    extra: tuple[float, ...] = ()
    note: str = ""

    def text(self) -> str:
        what = "integer" if self.integer else "number"
        if self.lo > -math.inf and self.hi < math.inf:
            lo, hi = fmt_number(self.lo), fmt_number(self.hi)
            bounds = f"in {'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"
        elif self.lo > -math.inf:
            bounds = f"{'>' if self.lo_open else '>='} {fmt_number(self.lo)}"
        elif self.hi < math.inf:
            bounds = f"{'<' if self.hi_open else '<='} {fmt_number(self.hi)}"
        else:
            bounds = ""
        s = f"{what} {bounds}".strip() + (" or inf" if self.inf_ok else "")
        if self.extra:
            s += " or " + ", ".join(map(fmt_number, self.extra))
        if self.items:
            s = f"comma-separated, each an {s}" if self.integer else f"comma-separated, each a {s}"
        return s + (f" ({self.note})" if self.note else "")

    def check(self, v: float) -> None:
        """Raise ValueError unless ``v`` is in the range."""
        if v in self.extra:
            return
        if isinstance(v, float) and math.isnan(v):
            raise ValueError
        if math.isinf(v) and not (self.inf_ok and v > 0):
            raise ValueError
        if self.integer and not math.isinf(v) and int(v) != v:
            raise ValueError
        if v < self.lo or (self.lo_open and v == self.lo) or v > self.hi or (self.hi_open and v == self.hi):
            raise ValueError

    def require(self, name: str, value: float) -> None:
        """PrivnluError (one line) unless ``value`` is in the range: the library's check of the same rule."""
        try:
            self.check(float(value))
        except (ValueError, TypeError):
            raise PrivnluError(f"{name} = {value} is out of range: {self.text()}") from None

    def wrap(self, parse: Callable[[str], Any] | None) -> Callable[[str], Any]:
        """An argparse ``type``: parse with ``parse`` (a list parser returns a list), then check the range."""

        def typed(text: str) -> Any:
            if parse is None:  # a string option that holds numbers: check them, keep the string
                value = number_list(text, self.integer) if self.items else number(text, self.integer)
            else:
                value = parse(text)
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            if self.items and not values and not self.empty_ok:
                raise argparse.ArgumentTypeError(f"'{text}' is empty; give {self.text()}")
            for v in values:
                try:
                    self.check(float(v))
                except (ValueError, TypeError):
                    raise argparse.ArgumentTypeError(f"'{text}' is out of range: {self.text()}") from None
            return text if parse is None else value

        typed.__name__ = getattr(parse, "__name__", "str")
        typed.range = self  # type: ignore[attr-defined]
        return typed


POS_INT = Range(lo=1, integer=True)
NONNEG_INT = Range(lo=0, integer=True)
POSITIVE = Range(lo=0, lo_open=True)
RATE = Range(lo=0, lo_open=True, hi=10.0)
PROB_OPEN = Range(lo=0, hi=1, lo_open=True, hi_open=True)
SEED = Range(lo=0, hi=2 ** 32 - 1, integer=True)
EPSILON = Range(lo=0, lo_open=True, hi=MAX_EPSILON)
DELTA = Range(lo=MIN_DELTA, hi=1, hi_open=True)
ETA = Range(lo=0, lo_open=True, hi=1e12)
CLIP = Range(lo=0, lo_open=True, hi=1e12)
POOL = Range(lo=0, integer=True, inf_ok=True, note="0 = no mask")


# -- checks of privacy parameters, shared by the schemes and the mechanisms (no torch) ---------------------------

def check_k(k: int, batch_size: int | None = None) -> None:
    if not isinstance(k, int) or k < 1:
        raise PrivnluError(f"k must be an integer >= 1, not {k} (k = 1 means no mixing)")
    if batch_size is not None and k > batch_size:
        raise PrivnluError(f"k = {k} is larger than the batch size {batch_size}; use a batch of at least k examples")


def check_privacy_params(epsilon: float, delta: float) -> None:
    require(epsilon > 0, f"epsilon must be > 0, not {epsilon}")
    require(epsilon <= MAX_EPSILON, f"epsilon must be at most {MAX_EPSILON:g}, not {epsilon} (a larger epsilon "
                                    "protects nothing)")
    require(0 < delta < 1, f"delta must be in (0, 1), not {delta}")
    require(delta >= MIN_DELTA, f"delta must be at least {MIN_DELTA:g}, not {delta} (below it the accountant's "
                                "truncated tail mass exceeds delta)")


def check_dp_settings(mechanism: str, epsilon: float, delta: float, clip: float, calibration: str) -> None:
    """Every check on user DP settings, in one place (used by :func:`calibrate` and :class:`DPSettings`)."""
    check_privacy_params(epsilon, delta)
    require(math.isfinite(clip) and clip > 0, f"the clipping bound C must be > 0, not {clip}")
    require_choice("calibration", calibration, DP_CALIBRATIONS)
    require_choice("mechanism", mechanism, DP_MECHANISMS)


# -- parsers: str -> value ----------------------------------------------------------------------------------------

def number(text: str, integer: bool = False) -> float:
    try:
        return int(text) if integer else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {'an integer' if integer else 'a number'}") from None


def number_list(text: str, integer: bool = False) -> list[float]:
    return [number(x.strip(), integer) for x in text.split(",") if x.strip()]


def int_list(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``."""
    return [int(v) for v in number_list(text, integer=True)]


def float_list(text: str) -> tuple[float, ...]:
    """``"0.1,1,8"`` -> ``(0.1, 1.0, 8.0)``."""
    return tuple(number_list(text))


def task_name(text: str) -> str:
    """A task name, which becomes part of file names, links and records: letters, digits and ``. _ + -``, not
    starting with a dot, at most 100 characters (the record schema's name rule, checked before any work)."""
    from .schemas.base import NAME
    if not NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"'{text[:40]}' is not a task name: use letters, digits, '.', '_', '+', "
                                         "'-' (no '/' or spaces, no leading '.'), at most 100 characters")
    return text


#: a numeric field's range: (lo, hi, lo included, hi included, a whole number)
NumberRange = tuple[float, float, bool, bool, bool]


def checked_number(block: dict, name: str, where: str, what: str, rng: NumberRange) -> float:
    """``block[name]``: a finite number in ``rng``, or one line naming ``where``, ``what`` record and the field."""
    lo, hi, lo_in, hi_in, whole = rng
    v = block.get(name)
    ok = (finite_number(v) and (v >= lo if lo_in else v > lo) and (v <= hi if hi_in else v < hi)
          and (not whole or float(v).is_integer()))
    shown = "missing" if name not in block else repr(v)[:40]
    require(ok, f"{where}: {what} field '{name}' is {shown}, not a finite number in "
                f"{'[' if lo_in else '('}{lo:g}, {hi:g}{']' if hi_in else ')'}" + (" (a whole number)" if whole else ""))
    return float(v)


def name_list(text: str) -> tuple[str, ...]:
    """``"a, b,c"`` -> ``("a", "b", "c")``; a list that names nothing (``","``) is refused."""
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"'{text}' names nothing: give at least one comma-separated name")
    return names


def parse_m(value: str | int | float) -> float:
    """Parse a pool size: a non-negative integer or ``inf``."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("inf", "infinity", "oo"):
            return INF
        try:
            value = int(v)
        except ValueError:
            raise PrivnluError(f"m must be a non-negative integer or 'inf', not '{value}'") from None
    if value != INF and (value < 0 or int(value) != value):
        raise PrivnluError(f"m must be a non-negative integer or 'inf', not {value} (m = 0 means no mask)")
    return float(value) if value == INF else int(value)


def m_label(m: float) -> str:
    """A pool size as text: ``"inf"`` or the integer."""
    return "inf" if m == INF else str(int(m))


def m_value(text: str) -> float:
    """argparse type of a pool size."""
    try:
        return parse_m(text)
    except PrivnluError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def m_list(text: str) -> list[float]:
    """argparse type of a list of pool sizes."""
    return [m_value(x) for x in text.split(",") if x.strip()]


# -- an option ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    """One setting: its flag, how its text is parsed, its range or choices, its default and its help.

    ``dest`` names the value (the library's field name); ``flag`` is its command-line spelling. ``kind`` is
    ``"value"`` (takes an argument), ``"append"`` (repeatable), ``"flag"`` (``store_true``; with ``const``, sets
    ``dest`` to it) or ``"positional"``. The range of a numeric option and its default are stated in ``--help``.
    """

    dest: str
    flag: str = ""
    help: str = ""
    parse: Callable[[str], Any] | None = None
    default: Any = None
    range: Range | None = None
    choices: tuple[Any, ...] | None = None
    metavar: str | None = None
    kind: str = "value"
    required: bool = False
    group: str = ""
    #: the kind of location the option names, checked before a command starts: "file", "dir", "key" (a key file,
    #: never replaced without --force) or "ledger" (appended to); "" for anything else
    writes: str = ""
    nargs: str | None = None
    const: Any = None  # the value of the flag given alone (with nargs "?")

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag or "--" + self.dest.replace("_", "-"),)

    def but(self, **changes: Any) -> "Option":
        """A copy with other settings (e.g. another default for one command)."""
        return replace(self, **changes)

    def help_text(self) -> str:
        """The help with its range and default stated."""
        text = self.help
        if self.range is not None and "range:" not in text:
            text += f"; range: {self.range.text()}"
        shown = self.default
        if shown is not None and shown is not False and "default" not in text:
            shown = ",".join(map(fmt_number, shown)) if isinstance(shown, (list, tuple)) else fmt_number(shown)
            text += f" (default: {shown or 'none'})"
        return text.replace("%", "%%")

    def argparse_type(self) -> Callable[[str], Any] | None:
        if self.kind == "flag":
            return None
        if self.range is not None:
            return self.range.wrap(self.parse)
        return self.parse

    def add_to(self, parser: argparse._ActionsContainer) -> argparse.Action:
        """Add this option to an argparse parser or group."""
        kw: dict[str, Any] = {"help": self.help_text()}
        if self.kind == "flag" and self.const is not None:  # a flag that sets dest to const (default: default)
            return parser.add_argument(*self.flags, dest=self.dest, action="store_const", const=self.const,
                                       default=self.default, **kw)
        if self.kind == "flag":
            return parser.add_argument(*self.flags, dest=self.dest, action="store_true", **kw)
        if self.kind == "append":
            kw["action"] = "append"
        kw.update(type=self.argparse_type(), default=self.default)
        if self.choices is not None:
            kw["choices"] = list(self.choices)
        if self.metavar is not None:
            kw["metavar"] = self.metavar
        if self.nargs is not None:
            kw["nargs"] = self.nargs
        if self.const is not None:
            kw["const"] = self.const
        if self.kind == "positional":
            return parser.add_argument(self.dest, **kw)
        return parser.add_argument(*self.flags, dest=self.dest, required=self.required, **kw)


# -- settings that declare their options --------------------------------------------------------------------------

_UNSET = object()


def param(option: Option, default: Any = _UNSET, **field_options: Any) -> Any:
    """A dataclass field declared by ``option`` (its default, unless ``default`` is given: the library's default may
    differ from what the command line shows, e.g. a scalar a Flower run config carries; ``MISSING``: required)."""
    if default is _UNSET:
        default = False if option.kind == "flag" and option.default is None else option.default
    return field(default=default, metadata={"option": option}, **field_options)


def declared(cls: type) -> tuple[Option, ...]:
    """The options a settings dataclass declares with :func:`param`, in field order."""
    return tuple(f.metadata["option"] for f in fields(cls) if "option" in f.metadata)


def given(cls: type, values: Any) -> dict[str, Any]:
    """The declared fields of ``cls`` found in ``values`` (a mapping or an argparse namespace), None left out."""
    values = values if isinstance(values, dict) else vars(values)
    return {o.dest: values[o.dest] for o in declared(cls) if values.get(o.dest) is not None}
