"""DAGER (Petrov, Dimitrov, Baader, Müller, Vechev; "DAGER: Exact Gradient Inversion for Large Language Models",
NeurIPS 2024), the published anchor of privnlu's span-inversion attack (``privnlu.attacks.gradient.dager``).

Their setting: BERT-base (d = 768), SST-2, the honest-but-curious server holds one FedSGD gradient of a batch of
B sentences; ROUGE-1 / ROUGE-2 of the recovered batch, in percent. These are DAGER's numbers for *their* model and
implementation, not privnlu's (privnlu attacks MiniLM, d = 384, through its own client code).
"""

from __future__ import annotations

from . import PaperValue, register

PAPER = "petrov2024"
SOURCE = "BERT-base, SST-2"

for b, r1, r2 in ((1, 100.0, 100.0), (4, 95.6, 93.0)):
    register(PaperValue(PAPER, SOURCE, f"B={b}", "ROUGE-1", r1),
             PaperValue(PAPER, SOURCE, f"B={b}", "ROUGE-2", r2))
register(PaperValue(PAPER, SOURCE, "exact recovery", "condition", None, scale="",
                    claim="exact recovery needs fewer token slots per update than the hidden size: the span of the "
                          "first layer's gradient has rank at most the number of tokens"))
