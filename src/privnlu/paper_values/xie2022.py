"""Xie & Hong (2022), DP instance encoding: reported results (Differentially Private Instance Encoding against Privacy Attacks, NAACL 2022 SRW).

Figures 1 and 2 are images in the paper; their values are not in the text. What is recorded is what Section 5
says about them (``claim``), plus the one number the text gives (about 85 % attack success on TextHide (16, 4)),
and the experimental settings Section 5 states (``SETTINGS``).
"""

from __future__ import annotations

from . import PaperValue, register

PAPER = "xie2022"
F1 = "Figure 1"
F2 = "Figure 2"

#: Section 5.1-5.3 settings (not results)
SETTINGS = {
    "epsilons": (0.1, 1, 2, 4, 8, 10, 15, 20),
    "delta": 1e-5,  # Gaussian only
    "texthide_point": (16, 4),
    "tasks": ("cola", "sst2"),
    "encoder": "pre-trained BERT (d = 768) as feature extractor; MLP head (768, 768, 768)",
    "attack": "100 data points, 5000 encodings per dataset (Xie & Hong 2021 attack)",
}

register(
    PaperValue(PAPER, F1, "DP-IE Gaussian and Laplace, CoLA and SST-2", "accuracy vs epsilon", None,
               claim="The model accuracy increases as the privacy parameter epsilon increases for both Gaussian and "
                     "Laplace."),
    PaperValue(PAPER, F1, "DP-IE Gaussian and Laplace, CoLA and SST-2", "accuracy at large epsilon", None,
               claim="The model accuracy can approach the base case as epsilon increases."),
    PaperValue(PAPER, F1, "all curves", "metric", None,
               claim="Figure 1 plots accuracy (learning utility) on both datasets, CoLA included; the text reports "
                     "no values.", note="CoLA's GLUE metric is MCC; the figure uses accuracy"),
)
for _task in ("CoLA", "SST-2"):
    register(PaperValue(PAPER, F2, f"TextHide (16, 4), {_task}", "attack success", 85.0,
                        claim="The privacy attack can recover around 85% of the original data vectors for both CoLA "
                              "and SST-2.", note="'around 85%' in the text of Section 5.3; the figure's exact value "
                                                 "is an image"))
register(
    PaperValue(PAPER, F2, "DP-IE, Figure 2(a)", "attack success", None,
               claim="The overall attack success rate is lower than the baseline's (TextHide)."),
    PaperValue(PAPER, F2, "DP-IE", "attack success vs epsilon", None,
               claim="The attack success rate increases as the privacy parameter epsilon increases."),
)
