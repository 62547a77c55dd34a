"""The privacy-utility audit: one task, every scheme, one frontier (``privnlu audit``).

* :mod:`.grid`: :class:`AuditSettings` and the grid of (scheme, setting) points;
* :mod:`.run`: :func:`run_audit` (utility, re-identification, own leakage and guarantee per point; resumable);
* :mod:`.frontier`: the Pareto front, the references and the recommendation, from the numbers alone.

The package imports only the settings (no torch): the command line reads them to build its options.
"""

from .grid import DEMO, AuditSettings, GridPoint, grid

__all__ = ["DEMO", "AuditSettings", "GridPoint", "grid"]
