"""DP-SGD guarantees in result records are verified before the report is built.

A record's DP-SGD block (a train record's ``dp``, an audit point's ``train.dp``) is checked by
:func:`privnlu.schemes.dp_sgd_claim.verify_dp_sgd`: its epsilon is recomputed from its own noise multiplier,
sampling rate, steps and delta with its own accountant. A record whose claim is below that, or whose fields are not
finite numbers in range, stops the whole report with one line naming the file (exit 2, nothing written), like any
other forged field (``docs/design/file-formats.md``, "Refuse rather than repair"): a report that showed the record
marked as invalid, or silently without it, would still put a guarantee the model does not have, or a shorter
comparison, in front of a reader who may never see the warning. An audit point's stated guarantee may not claim a
smaller epsilon than its verified DP-SGD block.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import require
from ..schemes.dp_sgd_claim import TOLERANCE, is_dp_sgd, verify_dp_sgd


def check_dp_claims(record: dict, file: str | Path) -> None:
    """Refuse (one line naming ``file``) a record whose DP-SGD guarantee its own mechanism does not give."""
    train = record.get("train")
    blocks = [("dp", record.get("dp")), ("train.dp", train.get("dp") if isinstance(train, dict) else None)]
    claims = [verify_dp_sgd(dp, where=f"{file}: field '{name}'") for name, dp in blocks if is_dp_sgd(dp)]
    g = record.get("guarantee")
    if record.get("scheme") == "dp-sgd" and isinstance(g, dict) and g.get("epsilon") is not None:
        eps = g["epsilon"]
        ok = isinstance(eps, (int, float)) and not isinstance(eps, bool) and math.isfinite(eps) and eps > 0
        require(ok and bool(claims) and eps >= max(claims) * (1 - TOLERANCE),
                f"{file}: field 'guarantee.epsilon' is {str(eps)[:40]}, not the epsilon of the record's verified "
                "DP-SGD block" + ("" if claims else " (it has none)"))


__all__ = ["check_dp_claims"]
