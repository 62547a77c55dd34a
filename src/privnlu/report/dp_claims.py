"""DP guarantees in result records are verified before the report is built.

Every block of a record that states an epsilon beside the mechanism it came from is recomputed from that mechanism
with privnlu's own accountant:

* DP-SGD (a train record's ``dp``, an audit point's ``train.dp``):
  :func:`privnlu.schemes.dp_sgd_claim.verify_dp_sgd`;
* DP instance encoding (a train record's ``dp``, an audit point's ``train.dp``, an attack condition's
  ``dp_calibration``): :func:`privnlu.mechanisms.dp_claim.verify_dp_ie`;
* federated DP-FedSGD (a federated record's ``dp``) and client DP-SGD (its ``client_dp``, a sentence-recovery
  record's ``plan``): :mod:`privnlu.schemes.dp_fedsgd_claim`.

A record whose claim is below the recomputation, or whose fields are not finite numbers in range, stops the whole
report with one line naming the file (exit 2, nothing written), like any other forged field
(``docs/design/file-formats.md``, "Refuse rather than repair"): a report that showed the record marked as invalid,
or silently without it, would still put a guarantee the data or model does not have, or a shorter comparison, in
front of a reader who may never see the warning. An audit point's stated guarantee may not claim a smaller epsilon
than its verified DP block.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import require
from ..params import finite_number
from ..schemes.dp_fedsgd_claim import verify_client_dp, verify_dp_fedsgd
from ..mechanisms.dp_claim import is_dp_ie, least_participations, verify_dp_ie
from ..schemes.dp_sgd_claim import TOLERANCE, is_dp_sgd, verify_dp_sgd
from ..schemes.registry import record_name


def _verify(block: object, where: str, record: dict, federated: bool, least: int = 1) -> float | None:
    """The verified epsilon of one ``dp`` block (``None`` where it claims none)."""
    if block is None:
        return None
    if is_dp_sgd(block):
        return verify_dp_sgd(block, where=where)
    if federated:
        return verify_dp_fedsgd(block, where=where)
    if is_dp_ie(block) or record_name(record) == "dp-ie":
        return verify_dp_ie(block, where=where, least=least)
    return None


def _least(record: dict) -> int:
    """The encodings per example a train record's own ``k``, ``inter`` and epochs make (1 where it has none)."""
    spec = record.get("spec")
    train = spec.get("train") if isinstance(spec, dict) else None
    epochs = train.get("epochs") if isinstance(train, dict) else None
    if record.get("kind") != "train" or epochs is None:
        return 1
    return least_participations(record.get("k"), epochs, bool(record.get("inter")))


def check_dp_claims(record: dict, file: str | Path) -> None:
    """Refuse (one line naming ``file``) a record whose DP guarantee its own mechanism does not give."""
    train = record.get("train")
    federated = str(record.get("kind", "")).startswith("federated")
    blocks = [("dp", record.get("dp"), federated), ("train.dp", train.get("dp") if isinstance(train, dict) else None,
                                                   False)]
    least = _least(record)
    conditions = record.get("conditions")
    if isinstance(conditions, dict):
        blocks += [(f"conditions.{name}.dp_calibration", c.get("dp_calibration"), False)
                   for name, c in conditions.items() if isinstance(c, dict)]
    claims = [c for name, dp, fed in blocks
              if (c := _verify(dp, f"{file}: field '{name}'", record, fed, least if name == "dp" else 1)) is not None]
    if record.get("client_dp") is not None:
        verify_client_dp(record["client_dp"], where=f"{file}: field 'client_dp'")
    plan = record.get("plan")
    if isinstance(plan, dict) and plan.get("epsilon") is not None:
        verify_dp_sgd({**plan, "accountant": "prv"}, where=f"{file}: field 'plan'")
    g = record.get("guarantee")
    if record_name(record) in ("dp-sgd", "dp-ie") and isinstance(g, dict) and g.get("epsilon") is not None:
        eps = g["epsilon"]
        ok = finite_number(eps) and eps > 0
        require(ok and bool(claims) and eps >= max(claims) * (1 - TOLERANCE),
                f"{file}: field 'guarantee.epsilon' is {str(eps)[:40]}, not the epsilon of the record's verified "
                "DP block" + ("" if claims else " (it has none)"))


__all__ = ["check_dp_claims"]
