"""Xie & Hong (2021), reconstruction attack on TextHide: reported numbers
(Reconstruction Attack on Instance Encoding for Language Understanding, EMNLP 2021).

* Table 1: attack success rate (%) by k at m = 1, rows ``CoLA`` / ``SST-2``, columns ``k=1`` ... ``k=6``
  (100 private examples x 50 encodings, BERT-base, d = 768). The paper does not say against which pool a
  recovered vector is judged ("the percentage of reconstructed data out of the original data").
* Figure 1: success vs the mask-pool size m in {1, 16, 64, 256, 1024, 4096}; an image in the extraction, so
  only the text's claim is recorded.
* Section 4.2: the similarity network ("a vanilla MLP", Adam, lr 0.01) "can achieve 94% accuracy" on pairs
  built from MNLI, CoLA and SST-2 encodings (the evaluation pairs and their balance are not stated).
"""

from __future__ import annotations

from . import PaperValue, register

PAPER = "xie2021"
T1 = "Table 1"
TASK_ROWS = {"cola": "CoLA", "sst2": "SST-2"}
_TABLE1 = {"CoLA": {1: 100.0, 2: 88.0, 4: 91.0, 6: 93.0}, "SST-2": {1: 100.0, 2: 92.0, 4: 95.0, 6: 88.0}}


def table1_column(k: int) -> str:
    return f"k={k}"


register(*(PaperValue(PAPER, T1, row, table1_column(k), v, note="m = 1; 100 private examples x 50 encodings")
           for row, cells in _TABLE1.items() for k, v in cells.items()))
register(*(PaperValue(PAPER, "Figure 1", row, "all m", None,
                      claim="the mask cannot ensure privacy: success stays high for every m in {1, 16, 64, 256, 1024, 4096} "
                            "(only increasing computational costs)")
           for row in _TABLE1))
register(PaperValue(PAPER, "Section 4.2", "pair network", "accuracy", 94.0,
                    note="vanilla MLP on stacked encoding pairs, Adam lr 0.01, cross-entropy; evaluation pairs not described"))
