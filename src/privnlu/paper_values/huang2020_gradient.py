"""TextHide (Huang et al. 2020), Table 2 and Figure 3: the gradient-matching attack (Algorithm 3).

Table 2: "Success rate of 50 independent gradients matching attacks. Baseline is the vanilla architecture
without TextHide. d: the dimensionality of the representation." Setting (Appendix C.1): LeNet-5 on CIFAR-10,
its last layer replaced by an MLP with hidden width d_m = d; the mask (and the mixing) at that hidden layer;
m = 1, batch size 1, the attacker knows the label; L-BFGS (lr 1, history 100, max-iter 20), 1,200 iterations;
success = MSE between the original and the recovered input <= 0.001. Values are fractions.
"""

from __future__ import annotations

from . import PaperValue, register

PAPER = "huang2020"
SOURCE = "Table 2"
DIMS = (4, 16, 64, 256, 1024)
_K1 = (0.76, 0.56, 0.30, 0.22, 0.08)

register(PaperValue(PAPER, SOURCE, "baseline", "all d", 0.82, scale="fraction",
                    note="the vanilla architecture without TextHide; one number, not per d"))
for d, v in zip(DIMS, _K1):
    register(PaperValue(PAPER, SOURCE, "k=1", f"d={d}", v, scale="fraction"))
for k in (2, 4):
    for d in DIMS:
        register(PaperValue(PAPER, SOURCE, f"k={k}", f"d={d}", 0.0, scale="fraction"))
register(PaperValue(PAPER, "Figure 3", "successful vs failed attack", "loss curves", None, scale="",
                    claim="the success of this attack largely depends on whether the mask is successfully matched: "
                          "when the MSE between real and dummy masks gets smaller, both the gradients' distance and "
                          "the MSE between leaked and original input get smaller"))

# the shape older callers used (fractions): {"baseline": .., "k=1": {d: ..}, "k>=2": 0.0}
PAPER_TABLE2 = {"baseline": 0.82, "k=1": dict(zip(DIMS, _K1)), "k>=2": 0.0}


def cell(d: int, k: int) -> PaperValue | None:
    """The paper's value for our (d, k) cell: k = 0 is the baseline (the paper has one baseline for all d)."""
    from . import lookup

    if k == 0:
        return lookup(PAPER, SOURCE, "baseline", "all d")
    return lookup(PAPER, SOURCE, f"k={k}", f"d={d}")
