"""Privacy mechanisms applied by the data owner: TextHide (and, in later modules, DP and d_chi)."""

from .release import KeyRecord, SharedPayload, hide_dataset
from .texthide import INF, HiddenBatch, MaskPool, TextHide, check_k, m_label, parse_m

__all__ = [
    "KeyRecord", "SharedPayload", "hide_dataset","INF", "HiddenBatch", "MaskPool", "TextHide", "check_k", "m_label", "parse_m"]
