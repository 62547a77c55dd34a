"""Names and small parsers that the command line needs to build its parsers, importable without torch.

The library modules import these from here (one definition each), so that ``privnlu X --help`` can state every
choice and default without importing torch, transformers or the training pipeline (issue 15, start-up).
"""

from __future__ import annotations

import math

from .errors import PrivnluError

#: a pool size of ``inf``: a fresh mask per example
INF = math.inf

#: DP instance encoding noise (mechanisms.dp)
DP_MECHANISMS = ("gaussian", "laplace")
#: d_chi release forms (mechanisms.dchi_text): token rep, text-to-text, sequence rep
DCHI_MECHANISMS = ("rep", "text", "sequence")
#: how dev representations are masked in evaluation (training.trainer)
EVAL_MASKS = ("pool", "none")
#: privacy-constrained fine-tuning modes and encoders (training.private_finetune)
FINETUNE_MODES = ("null", "sequence", "token", "text")
FINETUNE_ENCODERS = ("transformer", "bilstm")
#: privacy-adaptive MLM objectives (training.mlm)
MLM_OBJECTIVES = ("vanilla", "probability", "denoising")
#: the audit's schemes and default (m, k) points (audit.grid)
AUDIT_SCHEMES = ("none", "texthide-intra", "texthide-inter", "dp-ie", "dchi-text", "dchi-token", "dchi-sequence")
TEXTHIDE_POINT = (256, 4)  # Huang et al. 2020: the paper's recommended (m, k)
DP_POINT = (0, 4)  # Xie & Hong 2022, Algorithm 1: clip, mix k = 4, noise on each encoding, no sign mask
#: the budgets of the huang2020 recipes (experiments.huang2020.SCALES has one entry per name)
SCALE_NAMES = ("quick", "cpu", "paper")


def parse_m(value: str | int | float) -> float:
    """Parse a pool size: a non-negative integer or ``inf``."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("inf", "infinity", "oo"):
            return INF
        try:
            value = int(v)
        except ValueError:
            raise PrivnluError(f"m must be a non-negative integer or 'inf', not '{value}'") from None
    if value != INF and (value < 0 or int(value) != value):
        raise PrivnluError(f"m must be a non-negative integer or 'inf', not {value} (m = 0 means no mask)")
    return float(value) if value == INF else int(value)
