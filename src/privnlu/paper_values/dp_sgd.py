"""DP-SGD (Abadi et al. 2016) on SST-2: the published anchors privnlu's DP-SGD runs are read beside, and what
Xie & Hong 2022 say about DP-SGD (Differentially Private Instance Encoding against Privacy Attacks, NAACL 2022 SRW, Sections 1 and 2.4).

The anchors come from papers privnlu does not implement; their values are quoted as published and were
not re-read from the papers' tables here (the ``note`` says so). Neither anchor's setting is ours: they fine-tune
far larger encoders (RoBERTa-large, 355 M parameters) on the full SST-2 with GPU budgets; privnlu's runs fine-tune
MiniLM-L6 (22 M) at CPU scale.
"""

from __future__ import annotations

from . import PAPERS, PaperValue, register

PAPERS.setdefault("li2022", "Li, Tramer, Liang & Hashimoto 2022, Large Language Models Can Be Strong "
                            "Differentially Private Learners (ICLR)")
SOURCE = "SST-2 sentence classification"
NOT_CHECKED = "quoted as published; not re-read against the paper's text"

register(
    PaperValue("li2022", SOURCE, "RoBERTa-large, full fine-tuning with DP-Adam", "epsilon = 3", 93.9,
               note=NOT_CHECKED),
    PaperValue("xie2022", "Section 1", "DP-SGD and DP data release", "accuracy", None,
               claim="the differential privacy-based learning schemes could cause great accuracy loss"),
    PaperValue("xie2022", "Section 2.4", "DP-SGD in NLP", "accuracy", None,
               claim="the previous works usually struggle with greatly decreased performance as the added DP noise "
                     "needs to be scaled with large model parameters"),
)
