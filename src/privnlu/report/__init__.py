"""``privnlu report``: result JSONs -> one HTML page with plots.

Sections register themselves (see :mod:`privnlu.report.registry`); each feature
area has one module listed in :data:`privnlu.report.builder.SECTION_MODULES`.
"""

from __future__ import annotations

from .builder import SECTION_MODULES, build_report, load_results, load_sections, markdown_report
from .registry import SECTIONS, Context, md_table, section, table

__all__ = ["SECTIONS", "SECTION_MODULES", "Context", "build_report", "load_results", "load_sections", "markdown_report",
           "md_table", "section", "table"]
