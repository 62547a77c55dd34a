"""Privacy schemes: one type and one registry for every way privnlu privatizes data.

Each scheme (:class:`~privnlu.schemes.base.Scheme`) has one canonical name, its parameters with defaults, ranges
and help, ``validate()``, what the data owner releases (``release_hider`` for representation schemes,
``release_features``/``privatizer`` for d_chi, only the trained model for DP-SGD), what a query goes through, its
formal guarantee (``guarantee()``) and its threat model (``threat``: what it releases and which attacks apply).

>>> from privnlu import schemes
>>> schemes.names()
('none', 'texthide', 'texthide-inter', 'dp-ie', 'dchi-text', 'dchi-token', 'dchi-sequence', 'dp-sgd')
>>> schemes.create("texthide", m=16, k=2).label
'texthide-intra-m16-k2'

Old names (``dp``, ``texthide-intra``, ``rep``, ``token``, ``text``, ``sequence``, ...) still resolve, with one
deprecation line each, until the next release. Adding a scheme is one module that registers a subclass of a release kind
(:mod:`.kinds`; see docs/design/schemes.md).
"""

from . import none, texthide, dp_ie, dchi, dp_sgd  # noqa: F401, I001 (each registers its schemes, in this order)
from .base import Guarantee, Scheme, ThreatModel
from .dchi import DchiScheme, DchiSequence, DchiText, DchiToken
from .dp_ie import DPInstanceEncoding
from .dp_sgd import DPSGD
from .none import NoPrivacy
from .kinds import EncodingScheme, FeatureRelease, ModelScheme, ReleasedOnceScheme
from .registry import (ALIASES, SCHEMES, canonical, create, for_finetune_mode, from_record, get, names, options,
                       register, registered, unregister)
from .texthide import TextHideInter, TextHideIntra

__all__ = ["ALIASES", "SCHEMES", "DPInstanceEncoding", "DPSGD", "DchiScheme", "DchiSequence", "DchiText", "DchiToken",
           "EncodingScheme", "FeatureRelease", "ModelScheme", "ReleasedOnceScheme", "registered", "unregister",
           "Guarantee", "NoPrivacy", "Scheme", "TextHideInter", "TextHideIntra", "ThreatModel", "canonical", "create",
           "for_finetune_mode", "from_record", "get", "names", "options", "register"]
