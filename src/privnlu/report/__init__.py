"""``privnlu report``: result JSONs -> one HTML page with plots, or Markdown for the docs.

Sections register themselves (see :mod:`privnlu.report.registry`) and return content (:mod:`.content`: tables,
paragraphs, figures) that one renderer (:mod:`.render`) writes as HTML or Markdown; each feature area has one module
listed in :data:`privnlu.report.builder.SECTION_MODULES`.
"""

from __future__ import annotations

from .builder import (SECTION_MODULES, build_report, load_results, load_sections, markdown_report, section_html,
                      section_markdown)
from .registry import SECTIONS, Context, section
from .render import md_table, table

__all__ = ["SECTIONS", "SECTION_MODULES", "Context", "build_report", "load_results", "load_sections", "markdown_report",
           "md_table", "section", "section_html", "section_markdown", "table"]
