"""A received model folder's DP guarantees, recomputed before any weight is read (``privnlu predict``)."""

from __future__ import annotations

from pathlib import Path


def check_dp_claims(cfg: dict, where: str | Path) -> None:
    """Recompute the DP guarantees a ``privnlu.json`` states from their own mechanisms, before any weight is read:
    DP instance encoding's ``privacy.dp`` (:func:`privnlu.mechanisms.dp_claim.verify_dp_ie`), DP-FedSGD's and client
    DP-SGD's ``federated`` blocks (:mod:`privnlu.schemes.dp_fedsgd_claim`); one line naming the file and the field if a
    claim is below its recomputation or a field is malformed. (A DP-SGD model's ``privacy.dp`` is checked by
    ``predict`` itself.)"""
    from ..schemes.dp_fedsgd_claim import verify_client_dp, verify_dp_fedsgd
    from ..mechanisms.dp_claim import is_dp_ie, verify_dp_ie
    from ..schemes.dp_sgd_claim import is_dp_sgd
    from ..schemes.registry import record_name

    privacy, fed = cfg["privacy"], cfg.get("federated")
    dp = privacy.get("dp")
    if dp is not None and not is_dp_sgd(dp) and (is_dp_ie(dp) or record_name(privacy) == "dp-ie"):
        verify_dp_ie(dp, where=f"{where}: field 'privacy.dp'")
    if isinstance(fed, dict):
        if fed.get("dp_fedsgd") is not None:
            verify_dp_fedsgd(fed["dp_fedsgd"], where=f"{where}: field 'federated.dp_fedsgd'")
        if fed.get("client_dp") is not None:
            verify_client_dp(fed["client_dp"], where=f"{where}: field 'federated.client_dp'")
