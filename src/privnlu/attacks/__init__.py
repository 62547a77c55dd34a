"""Attacks on instance encodings, shared gradients and released models, each acting only on what its
capabilities grant (:mod:`privnlu.attacks.registry` names them all).

* :mod:`.threat`: :class:`Capabilities` (an attacker's grants), :class:`AttackerView`, the :class:`Attack` base;
* :mod:`.registry`: one entry per attack: its class, its capabilities, its command;
* :mod:`.conditions`: the defence settings attacked and the defender's release under one of them;
* families: :mod:`.representation` (similarity search, inversion), :mod:`.reconstruction` (Xie & Hong 2021),
  :mod:`.gradient` (gradient matching, embedding-gradient leak, DAGER-class span inversion), :mod:`.membership`
  (LiRA, the loss attack), :mod:`.dchi` (token-embedding inversion), :mod:`.privacy_audit` (empirical epsilon
  lower bounds);
* :mod:`.runs`: the attacks as runs on a task or a shared file (``privnlu attack ...``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["INVERSION_THREAT", "MEMBERSHIP_THREAT", "RECONSTRUCTION_THREAT", "SEARCH_THREAT", "Attack", "AttackerView",
           "Capabilities", "Corpus", "Grant"]


def __getattr__(name: str) -> Any:
    """The names of :mod:`.threat`, imported on first use (reading :mod:`.registry` imports no torch)."""
    if name in __all__:
        from . import threat

        return getattr(threat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
