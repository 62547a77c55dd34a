"""``texthide`` and ``texthide-inter``: (m, k)-TextHide (Huang et al. 2020, Algorithm 1).

Each encoding mixes ``k`` sentence representations with coefficients ``lambda ~ |N(0, I_k)|`` normalised to sum 1
and multiplies the mix entry-wise by a sign mask from a secret pool of ``m`` masks (Algorithm 1, lines 4-8);
TextHide-inter takes ``floor(k/2)`` of the ``k`` components from a public corpus. The mechanism is
:class:`privnlu.mechanisms.texthide.TextHide`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import PrivnluError
from ..options import OPTIONS
from ..params import check_k, m_label, param, parse_m
from .base import Guarantee, Scheme, ThreatModel
from .registry import register

M, K = OPTIONS["m"], OPTIONS["k"]


TEXTHIDE_THREAT = ThreatModel(
    releases="the encodings x~ and the mixed labels y~ (and, federated, the gradients computed on them)",
    adversary="an eavesdropper or untrusted model builder who knows the encoder, the algorithm, m and k, but not "
              "the mask pool or the one-time keys",
    query="one pool mask from the owner's key, no mixing",
    attacks=("reconstruction", "search", "keyless-abs-head", "inversion", "gradient-matching"),
    audit_attack="reconstruction (Xie & Hong 2021), then search",
)


@register
@dataclass(frozen=True)
class TextHideIntra(Scheme):
    """(m, k)-TextHide mixing within the private data."""

    name = "texthide"
    title = "TextHide-intra"
    aliases = ("texthide-intra",)
    paper = "Huang et al. 2020"
    level = "representation"
    release = "per-batch"
    federated = True
    threat = TEXTHIDE_THREAT
    known_leakage = ("TextHide's sign masks are invisible to `abs()`, so a holder of the encodings can train a "
                     "classifier on `|x~|` without any key, and the reconstruction attack of Xie & Hong (2021) "
                     "recovers most training sentences from the encodings (docs/papers/xie2021.md).")
    inter: ClassVar[bool] = False

    m: float = param(M.but(default=256))
    k: int = param(K.but(default=4))

    def validate(self) -> None:
        object.__setattr__(self, "m", parse_m(self.m))
        object.__setattr__(self, "k", _integer(self.k))
        check_k(self.k)

    def params(self) -> dict[str, Any]:
        return {"m": m_label(self.m), "k": self.k}

    @property
    def variant(self) -> str:
        return "texthide-inter" if self.inter else "texthide-intra"

    @property
    def label(self) -> str:
        return f"{self.variant}-m{m_label(self.m)}-k{self.k}"

    @property
    def n_private(self) -> int:
        """Private components per encoding: ``k``, or ``ceil(k/2)`` with a public corpus."""
        return math.ceil(self.k / 2) if self.inter else self.k

    @property
    def key_material(self) -> bool:
        return self.m not in (0, math.inf)

    def guarantee(self, **context: Any) -> Guarantee:
        return Guarantee("none", "none: TextHide is not a formal privacy guarantee; its security rests on a hardness "
                                 "conjecture, and published attacks break it")

    def hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> Any:
        """The encoder of private representations (fresh one-time keys per batch); ``public``: the public
        representations TextHide-inter mixes in."""
        from ..mechanisms.texthide import TextHide

        return TextHide(self.m, self.k, dim=dim, rng=rng, public=public if self.inter else None, pool=pool)

    release_hider = hider


@register
@dataclass(frozen=True)
class TextHideInter(TextHideIntra):
    """(m, k)-TextHide with ``floor(k/2)`` components of each encoding from a public corpus."""

    name = "texthide-inter"
    title = "TextHide-inter"
    aliases = ()
    federated = False
    inter: ClassVar[bool] = True

    def validate(self) -> None:
        super().validate()
        if self.k < 2:
            raise PrivnluError("TextHide-inter needs k >= 2 (floor(k/2) public components)")


def _integer(v: Any) -> Any:
    """An integral float or numeric string as an int (JSON and flags give either); anything else unchanged."""
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v
