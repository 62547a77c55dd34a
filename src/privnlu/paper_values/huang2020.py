"""Huang, Song, Chen, Li, Arora (2020), TextHide: reported numbers (Findings of EMNLP 2020).

* Table 1: GLUE dev, BERT-base fine-tuned jointly with the MLP head, mean of 5 runs (standard deviation in
  ``note``); (m, k) = (256, 4), and (16, 4) for RTE. Rows are the paper's task names, one row per metric where a
  cell holds two (``"MRPC F1"``, ``"MRPC Acc."``); columns ``Baseline``, ``TextHide-intra``, ``TextHide-inter``.
* Section 4.2 text: the mean reduction of intra (1.9) and the additional reduction of inter (2.5).
* Figure 2 (m x k grid): an image in the paper; only the claims of its caption and text are recorded.
* Table 6: SST-2 TextHide-inter (256, 4) accuracy with three public corpora.
* Table 5 (Appendix B.2): Table 1 again with RoBERTa-base (same rows and columns), and its two mean reductions.
"""

from __future__ import annotations

from . import PaperValue, register

PAPER = "huang2020"
T1 = "Table 1"
VARIANT_COLUMNS = {"baseline": "Baseline", "texthide-intra": "TextHide-intra", "texthide-inter": "TextHide-inter"}

# row -> (baseline, intra, inter) with their standard deviations over 5 runs; None where the paper has "-"
_TABLE1: dict[str, tuple[tuple[float, float] | None, ...]] = {
    "RTE": ((72.0, 0.86), (65.2, 1.71), (54.4, 1.82)),
    "MRPC F1": ((90.2, 0.80), (89.7, 0.56), (88.1, 0.52)),
    "MRPC Acc.": ((86.2, 1.40), (85.6, 0.96), (82.6, 0.75)),
    "STS-B P corr.": ((90.1, 0.12), (87.0, 0.25), (86.0, 0.27)),
    "STS-B S corr.": ((89.7, 0.17), (87.0, 0.27), (86.2, 0.19)),
    "CoLA": ((58.9, 1.00), (56.3, 0.86), (52.3, 0.80)),
    "SST-2": ((92.4, 0.76), (91.7, 0.51), (91.3, 0.41)),
    "QNLI": ((91.7, 0.70), (91.0, 0.31), (89.8, 0.56)),
    "QQP F1": ((87.9, 0.39), (87.3, 0.41), (86.5, 0.28)),
    "QQP Acc.": ((91.0, 0.30), (90.5, 0.33), (89.8, 0.14)),
    "MNLI m": ((86.1, 0.36), (84.0, 0.15), None),
    "MNLI mm": ((85.6, 0.23), (84.1, 0.23), None),
}

#: our task name and metric key -> the paper's Table 1 row
TASK_ROWS: dict[tuple[str, str], str] = {
    ("rte", "accuracy"): "RTE",
    ("mrpc", "f1"): "MRPC F1",
    ("mrpc", "accuracy"): "MRPC Acc.",
    ("stsb", "pearson"): "STS-B P corr.",
    ("stsb", "spearman"): "STS-B S corr.",
    ("cola", "mcc"): "CoLA",
    ("sst2", "accuracy"): "SST-2",
    ("qnli", "accuracy"): "QNLI",
}
#: the paper's primary metric per task (the first number of a cell), as our metric key
PRIMARY_METRIC = {"rte": "accuracy", "mrpc": "f1", "stsb": "pearson", "cola": "mcc", "sst2": "accuracy", "qnli": "accuracy"}
#: (m, k) of Table 1
TABLE1_POINT = {"rte": (16, 4)}
TABLE1_DEFAULT_POINT = (256, 4)

for _row, _cells in _TABLE1.items():
    for _col, _cell in zip(VARIANT_COLUMNS.values(), _cells):
        if _cell is not None:
            register(PaperValue(PAPER, T1, _row, _col, _cell[0], note=f"mean of 5 runs, std {_cell[1]:.2f}"))

register(
    PaperValue(PAPER, T1, "mean reduction", "TextHide-intra", 1.9, scale="points",
               claim="The averaged accuracy reduction of TextHide-intra is 1.9%, when compared to the baseline model.",
               note="Section 4.2 and abstract; over the eight GLUE tasks of Table 1 (how two-number cells enter the "
                    "average is not stated)"),
    PaperValue(PAPER, T1, "mean reduction", "TextHide-inter beyond intra", 2.5, scale="points",
               claim="With the same (m, k), TextHide-inter incurs an additional 2.5% accuracy loss on average.",
               note="Section 4.2"),
)

F2 = "Figure 2"
register(
    PaperValue(PAPER, F2, "all tasks", "(m, k) = (0, 1)", None,
               claim="(m, k) = (0, 1) is equivalent to the baseline."),
    PaperValue(PAPER, F2, "all tasks", "k at fixed m", None,
               claim="When m is fixed, the network performs consistently with different k's."),
    PaperValue(PAPER, F2, "all tasks", "m", None,
               claim="Increasing m makes learning harder since the network needs to generalize to different masking "
                     "patterns."),
    PaperValue(PAPER, F2, "all tasks except RTE", "m = 256", None,
               claim="TextHide with m = 256 achieves good utility on all datasets (except RTE); for most datasets it "
                     "only reduces accuracy slightly."),
    PaperValue(PAPER, F2, "data size > 100k", "largest m", None,
               claim="TextHide can work with larger m when the training corpus is larger (e.g. m = 512 for data size "
                     "> 100k)."),
)

T6 = "Table 6"
for _corpus, _size, _acc, _std in (("QNLI", "108k", 91.2, 0.68), ("QQP", "364k", 91.0, 0.45), ("MNLI", "393k", 91.3, 0.41)):
    register(PaperValue(PAPER, T6, _corpus, "Acc.", _acc,
                        note=f"SST-2 (67k) private, TextHide-inter (256, 4), public corpus |D| = {_size}; std {_std:.2f}"))
register(PaperValue(PAPER, T6, "all corpora", "Acc.", None,
                    claim="The choice of the public corpus does not have a major impact on the final accuracy of SST-2."))


def table1(task: str, variant: str, metric: str | None = None) -> PaperValue | None:
    """The paper's Table 1 cell for our task name, variant (``baseline``, ``texthide-intra``, ``texthide-inter``) and
    metric key (``accuracy``, ``f1``, ``mcc``, ``pearson``, ``spearman``; default: the task's primary metric)."""
    from . import lookup

    row = TASK_ROWS.get((task, metric or PRIMARY_METRIC.get(task, "")))
    col = VARIANT_COLUMNS.get(variant)
    return lookup(PAPER, T1, row, col) if row and col else None


def mean_reduction(variant: str = "texthide-intra", rows: list[str] | None = None) -> float:
    """The mean of (baseline - variant) over Table 1 cells that have both numbers.

    With ``rows=None`` every number of the table counts (two per MRPC, STS-B, QQP and MNLI cell): that gives 1.87
    for intra, the paper's "1.9"; one primary metric per task gives 2.14 (see docs/papers/huang2020.md).
    """
    from . import lookup

    drops = []
    for row in rows if rows is not None else list(_TABLE1):
        b, v = lookup(PAPER, T1, row, "Baseline"), lookup(PAPER, T1, row, VARIANT_COLUMNS[variant])
        if b is not None and v is not None:
            drops.append(b.value - v.value)
    return sum(drops) / len(drops)


def primary_rows(tasks: tuple[str, ...] | None = None) -> list[str]:
    """Table 1 rows of the primary metric of each task (all of the paper's tasks by default)."""
    if tasks is None:
        return ["RTE", "MRPC F1", "STS-B P corr.", "CoLA", "SST-2", "QNLI", "QQP F1", "MNLI m"]
    return [TASK_ROWS[(t, PRIMARY_METRIC[t])] for t in tasks if t in PRIMARY_METRIC]


# -- Table 5 (Appendix B.2): Table 1 with RoBERTa-base ---------------------------------------------------------------

T5 = "Table 5"
#: row -> (baseline, intra, inter) with their standard deviations over 5 runs, RoBERTa-base fine-tuned jointly
_TABLE5: dict[str, tuple[tuple[float, float] | None, ...]] = {
    "RTE": ((78.8, 0.69), (77.9, 0.99), (70.8, 0.78)),
    "MRPC F1": ((92.3, 0.56), (91.1, 0.68), (90.5, 0.68)),
    "MRPC Acc.": ((89.3, 0.66), (87.6, 0.34), (87.1, 0.89)),
    "STS-B P corr.": ((91.3, 0.13), (90.4, 0.19), (82.6, 0.65)),
    "STS-B S corr.": ((91.0, 0.19), (90.3, 0.16), (84.2, 0.52)),
    "CoLA": ((63.0, 1.24), (59.1, 1.01), (57.2, 0.90)),
    "SST-2": ((94.1, 0.52), (93.5, 0.21), (92.8, 0.47)),
    "QNLI": ((92.7, 0.21), (92.3, 0.29), (91.7, 0.48)),
    "QQP F1": ((88.8, 0.21), (88.1, 0.24), (87.7, 0.36)),
    "QQP Acc.": ((91.6, 0.15), (91.0, 0.31), (90.7, 0.22)),
    "MNLI m": ((87.2, 0.39), (86.4, 0.21), None),
    "MNLI mm": ((86.8, 0.21), (86.0, 0.15), None),
}
for _row, _cells in _TABLE5.items():
    for _col, _cell in zip(VARIANT_COLUMNS.values(), _cells):
        if _cell is not None:
            register(PaperValue(PAPER, T5, _row, _col, _cell[0], note=f"RoBERTa-base, mean of 5 runs, std {_cell[1]:.2f}"))
register(
    PaperValue(PAPER, T5, "mean reduction", "TextHide-intra", 1.1, scale="points",
               claim="When incorporated with RoBERTa-base, the averaged accuracy reduction of TextHide-intra is 1.1% "
                     "when compared with the baseline model (was 1.9% for BERT-base).", note="Appendix B.2"),
    PaperValue(PAPER, T5, "mean reduction", "TextHide-inter beyond intra", 2.6, scale="points",
               claim="TextHide-inter incurs an additional 2.6% accuracy loss on average (was 2.5% for BERT-base).",
               note="Appendix B.2"),
)


def table5(task: str, variant: str, metric: str | None = None) -> PaperValue | None:
    """The paper's Table 5 (RoBERTa-base) cell for our task name, variant and metric key (as :func:`table1`)."""
    from . import lookup

    row = TASK_ROWS.get((task, metric or PRIMARY_METRIC.get(task, "")))
    col = VARIANT_COLUMNS.get(variant)
    return lookup(PAPER, T5, row, col) if row and col else None
