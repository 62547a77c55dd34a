"""Attacks on instance encodings, each acting only on what its threat model grants.

* :mod:`.threat`: :class:`ThreatModel`, :class:`AttackerView`, the :class:`Attack` base;
* :mod:`.search`: FAISS similarity search (Huang et al. 2020, section 4.4);
* :mod:`.inversion`: representation reconstruction by an MLP (Huang et al. 2020, appendix C.3);
* :mod:`.leakage`: the five leakage metrics;
* :mod:`.membership`: membership inference on a released model (LiRA, Carlini et al. 2022; the loss attack);
* :mod:`.audit`: the auditor that plays the defender and scores with the truth.
"""

from .threat import (INVERSION_THREAT, MEMBERSHIP_THREAT, RECONSTRUCTION_THREAT, SEARCH_THREAT, Attack, AttackerView,
                     Corpus, Grant, ThreatModel)

__all__ = ["INVERSION_THREAT", "MEMBERSHIP_THREAT", "RECONSTRUCTION_THREAT", "SEARCH_THREAT", "Attack", "AttackerView",
           "Corpus", "Grant", "ThreatModel"]
