"""``privnlu report``: result JSONs -> one HTML page with plots.

Sections register themselves (see :mod:`privnlu.report.registry`); each feature
area has one module listed in :data:`SECTION_MODULES`.
"""

from __future__ import annotations

import importlib

from .builder import build_report, load_results, markdown_report
from .registry import SECTIONS, Context, md_table, section, table

SECTION_MODULES = ("audit_sections", "texthide_sections", "attack_sections", "dp_sections", "dp_attack_sections", "dchi_sections", "dchi_training_sections",
                   "federated_sections")


def load_sections() -> None:
    for name in SECTION_MODULES:
        importlib.import_module(f"{__name__}.{name}")


__all__ = ["SECTIONS", "Context", "build_report", "load_results", "load_sections", "markdown_report", "md_table", "section", "table"]
