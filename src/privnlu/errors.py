"""User-facing errors.

Every problem caused by the user's input (a bad path, a bad flag value, a corrupt
cache) raises :class:`PrivnluError`. The CLI turns it into one line on stderr and
exit code 2, with no traceback.
"""

from __future__ import annotations

import math


class PrivnluError(Exception):
    """A problem with the user's input; the message says what to do."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`PrivnluError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise PrivnluError(message)


def require_choice(what: str, value: object, choices) -> None:
    """Raise :class:`PrivnluError` ("unknown <what> '<value>'; choose one of ...") unless ``value`` is in ``choices``."""
    require(value in choices, f"unknown {what} '{value}'; choose one of {', '.join(map(str, choices))}")


def require_at_least_one(config: object, *names: str) -> None:
    """Raise :class:`PrivnluError` ("<field-name> must be >= 1") unless every named field of ``config`` is >= 1."""
    for name in names:
        require(getattr(config, name) >= 1, f"{name.replace('_', '-')} must be >= 1")


def require_learning_rate(*values: float) -> None:
    """Raise :class:`PrivnluError` unless every learning rate is positive and finite."""
    for v in values:
        require(v > 0 and math.isfinite(v), f"the learning rate must be positive, not {v}")
