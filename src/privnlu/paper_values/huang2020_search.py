"""Huang et al. (2020), TextHide: the attack tables (Findings of EMNLP 2020).

* Table 3: representation-based similarity search (RSS), mean over 1,000 queries; rows are the metrics
  (``Identity``, ``JC``, ``TF-IDF``, ``Label``, ``SBERT``), columns ``Baseline``, ``Mix-only``, ``TextHide``,
  ``Rand``; ``source`` is ``Table 3 (CoLA)`` or ``Table 3 (SST-2)``.
* Table 8: representation reconstruction (RepRecon) + RSS, 500 dev queries, the same layout.
* Tables 4 and 7: one example query per task and what each scheme retrieves (text, recorded as claims).

The paper prints fractions (0.993); the values here are x100 (99.3) to sit beside privnlu's percentages.
Table 3's extraction repeats its SST-2 block; the CoLA block is the one before the "(a) CoLA" caption.
"""

from __future__ import annotations

from . import PaperValue, register

PAPER = "huang2020"
METRIC_ROWS = {"identity": "Identity", "jaccard": "JC", "tfidf": "TF-IDF", "label": "Label", "sbert": "SBERT"}
CONDITION_COLUMNS = {"baseline": "Baseline", "mix-only": "Mix-only", "texthide": "TextHide", "random": "Rand"}
TASK_NAMES = {"cola": "CoLA", "sst2": "SST-2"}

_COLS = ("Baseline", "Mix-only", "TextHide", "Rand")
_TABLES = {
    "Table 3 (CoLA)": {"Identity": (0.993, 0.111, 0.000, 0.000), "JC": (0.999, 0.184, 0.023, 0.024),
                       "TF-IDF": (1.000, 0.194, 0.015, 0.015), "Label": (0.998, 0.759, 0.494, 0.542),
                       "SBERT": (0.991, 0.280, 0.102, 0.101)},
    "Table 3 (SST-2)": {"Identity": (0.992, 0.064, 0.000, 0.000), "JC": (0.999, 0.168, 0.100, 0.096),
                        "TF-IDF": (1.000, 0.080, 0.007, 0.008), "Label": (1.000, 0.714, 0.503, 0.501),
                        "SBERT": (1.000, 0.275, 0.202, 0.209)},
    "Table 8 (CoLA)": {"Identity": (0.982, 0.002, 0.000, 0.000), "JC": (0.992, 0.033, 0.029, 0.028),
                       "TF-IDF": (0.993, 0.018, 0.014, 0.018), "Label": (0.998, 0.818, 0.638, 0.620),
                       "SBERT": (0.994, 0.111, 0.051, 0.104)},
    "Table 8 (SST-2)": {"Identity": (0.948, 0.000, 0.000, 0.000), "JC": (0.953, 0.065, 0.064, 0.080),
                        "TF-IDF": (0.949, 0.019, 0.013, 0.014), "Label": (0.968, 0.464, 0.472, 0.452),
                        "SBERT": (0.959, 0.268, 0.266, 0.211)},
}

#: Tables 4 (RSS) and 7 (RepRecon): task -> (query, {scheme: retrieved sentence}); labels as the paper marks them
EXAMPLES = {
    "Table 4": {
        "CoLA": ("Some people consider the noisy dogs dangerous. (acceptable)",
                 {"Baseline": "Some people consider the noisy dogs dangerous. (acceptable)",
                  "Mix-only": "Some people consider the noisy dogs dangerous. (acceptable)",
                  "TextHide": "I know a man who hates myself. (unacceptable)"}),
        "SST-2": ("otherwise excellent", {"Baseline": "otherwise excellent", "Mix-only": "worthy",
                                          "TextHide": "passive-aggressive"}),
    },
    "Table 7": {
        "CoLA": ("The magazines were sent to herself by Mary. (unacceptable)",
                 {"Baseline": "The magazines were sent to herself by Mary. (unacceptable)",
                  "Mix-only": "The company sent China its senior mining engineers to help plan the new mines. (unacceptable)",
                  "TextHide": "Hierarchy of Projections: (acceptable)"}),
        "SST-2": ("an exquisitely crafted and acted tale.",
                  {"Baseline": "an exquisitely crafted and acted tale.", "Mix-only": "to make their way through this tragedy",
                   "TextHide": "fails to live up to - or offer any new insight into - its chosen topic"}),
    },
}


def source(table: int, task: str) -> str:
    """``source`` of a task's block, e.g. ``source(3, "cola") == "Table 3 (CoLA)"``."""
    return f"Table {table} ({TASK_NAMES.get(task, task)})"


register(*(PaperValue(PAPER, src, row, col, round(100 * v, 1), note=f"the paper prints {v:.3f}")
           for src, rows in _TABLES.items() for row, cells in rows.items() for col, v in zip(_COLS, cells)))
register(*(PaperValue(PAPER, table, task, scheme, None, scale="", claim=f"query: {query} -> {answer}")
           for table, tasks in EXAMPLES.items() for task, (query, answers) in tasks.items() for scheme, answer in answers.items()))
