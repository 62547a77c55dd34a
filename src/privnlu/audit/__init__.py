"""The privacy-utility audit: one task, every scheme, one frontier (``privnlu audit``).

* :mod:`.grid`: :class:`AuditSettings` and the grid of (scheme, setting) points;
* :mod:`.run`: :func:`run_audit` (utility, re-identification, own leakage and guarantee per point; resumable);
* :mod:`.frontier`: the Pareto front, the references and the recommendation, from the numbers alone.
"""

from .frontier import Point, pareto_front, recommend
from .grid import DEMO, AuditSettings, GridPoint, grid
from .run import run_audit

__all__ = ["DEMO", "AuditSettings", "GridPoint", "Point", "grid", "pareto_front", "recommend", "run_audit"]
