"""Privacy accounting in one place: every DP release as a ``dp_accounting`` event, and the accountants that price it.

:mod:`.events` describes a release as an immutable :class:`~dp_accounting.DpEvent` (Gaussian or Laplace steps,
Poisson-sampled, self-composed, composed) with a plain JSON form; :mod:`.accountants` computes its epsilon
(:func:`epsilon`) and calibrates noise for a target (:func:`noise_for`) with an accountant chosen by name from a
small registry (:func:`create_accountant`). Design: docs/design/accounting.md.
"""

from __future__ import annotations

from .accountants import (Accountant, accountant_names, analytic_gaussian_sigma, create_accountant, epsilon, noise_for,
                          register_accountant)
from .events import (compose, describe, event_from_json, event_to_json, gaussian_event, laplace_event, leaves,
                     mechanism_event)

__all__ = ["Accountant", "accountant_names", "analytic_gaussian_sigma", "compose", "create_accountant", "describe",
           "epsilon", "event_from_json", "event_to_json", "gaussian_event", "laplace_event", "leaves",
           "mechanism_event", "noise_for", "register_accountant"]
