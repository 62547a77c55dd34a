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
from .base import Guarantee, ThreatModel
from .kinds import EncodingScheme
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
class TextHideIntra(EncodingScheme):
    """(m, k)-TextHide mixing within the private data."""

    name = "texthide"
    title = "TextHide-intra"
    aliases = ("texthide-intra",)
    paper = "Huang et al. 2020"
    level = "representation"
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
    def mixes_public(self) -> bool:
        return bool(self.inter)

    def record_fields(self) -> dict[str, Any]:
        return {"m": m_label(self.m), "k": self.k}

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

    # -- the audit grid: one point per (m, k) of --texthide

    @classmethod
    def audit_points(cls, settings: Any) -> list[dict[str, Any]]:
        return [{"m": parse_m(m), "k": k} for m, k in settings.texthide]

    @classmethod
    def audit_point_name(cls, point: dict[str, Any]) -> str:
        return f"{cls(m=point['m'], k=point['k']).variant}-m{m_label(point['m'])}-k{point['k']}"

    @classmethod
    def audit_scheme(cls, point: dict[str, Any], settings: Any, *, eta: float | None = None) -> "TextHideIntra":
        return cls(m=point["m"], k=point["k"])

    # -- the model card and prediction

    def query_dp(self, privacy: dict) -> dict | None:
        """The DP settings a query's encoding applies (clip and noise), or None."""
        return None

    def card_block(self, privacy: dict, *, joint: bool) -> dict[str, Any]:
        p = privacy
        return {"m": p["m"], "k": p["k"], "mixing": "inter" if p["inter"] else "intra",
                "query_encoding": "pool mask" if p["eval_mask"] == "pool" else "none", "formal_guarantee": "none"}

    def card_rows(self, privacy: dict) -> list[str]:
        p = privacy
        return [f"| m (mask pool size) | {p['m']} |", f"| k (representations per encoding) | {p['k']} |",
                f"| mixing | {'inter (public corpus)' if p['inter'] else 'intra'} |",
                f"| query encoding | {'a mask from the pool, no mixing' if p['eval_mask'] == 'pool' else 'raw'} |"]

    def card_query(self, privacy: dict) -> str:
        from ..models.saving import QUERY_DRAWS

        p, dp = privacy, self.query_dp(privacy)
        if p.get("eval_mask") != "pool":
            return super().card_query(p)
        parts = []
        if dp is not None:
            parts.append(f"clipped to {dp['clip']:g}")
        m = str(p.get("m"))
        if p.get("abs_input"):
            parts.append("left unmasked (the head sees only |x|)")
        elif p.get("key_required"):
            parts.append("multiplied by a sign mask from the owner's secret pool (the key, not in this folder)")
        elif m == "inf":
            parts.append("multiplied by a random sign mask")
        if dp is not None and p.get("noisy_queries"):
            parts.append(f"noised with the training's {dp['mechanism']} noise")
        if not parts:
            return "Queries go to the head unmasked (m = 0); predictions are deterministic."
        how = ("the whole pool's masks" if p.get("key_required") and dp is None and m.isdigit()
               and int(m) <= QUERY_DRAWS else f"{QUERY_DRAWS} encodings seeded by the query")
        return ("Each query's sentence representation is " + ", ".join(parts) + ", never mixed, as in evaluation; "
                f"`privnlu predict` averages the head's probabilities over {how}, so a prediction is deterministic "
                "(`--samples 1`: the paper's one random encoding per query).")

    def query_encoder(self, privacy: dict, *, dim: int, pool: Any, rng: Any) -> Any:
        from ..mechanisms.texthide import MaskPool, TextHide

        if privacy["eval_mask"] != "pool":
            return None
        m = parse_m(privacy["m"])
        if pool is None:  # no key needed: no mask (m = 0), a fresh one per query (m = inf), or a head on |x|
            m = m if (m == math.inf and not privacy["abs_input"]) else 0
            pool = MaskPool.generate(m, dim, rng)
        return self.query_hider(privacy, m=m, dim=dim, pool=pool, rng=rng) or TextHide(m, self.k, dim=dim, rng=rng,
                                                                                        pool=pool)

    def query_hider(self, privacy: dict, *, m: float, dim: int, pool: Any, rng: Any) -> Any:
        """The query encoder where it is more than a pool mask (DP instance encoding's clip and noise), or None."""
        return None

    def describe_queries(self, privacy: dict, *, joint: bool, hider: Any, key_source: str | None,
                         federated: bool) -> str:
        p, dp = privacy, self.query_dp(privacy)
        if hider is None:
            return "queries unmixed, raw sentence representations" + (
                " (as the federated server evaluated: the clients' pools never left them)" if federated else
                " (the run evaluated with --eval-mask none)")
        parts = []
        if dp is not None:
            parts.append(f"clipped to {dp['clip']:g} ({dp['clip_norm']})")
        if key_source:
            parts.append(f"masked with a mask from the owner's pool ({key_source})")
        elif parse_m(p["m"]) == math.inf and not p["abs_input"]:
            parts.append("masked with a random mask (m = inf)")
        elif p["abs_input"] and parse_m(p["m"]) != 0:
            parts.append("unmasked (the head sees |x|, so masks make no difference)")
        if dp is not None and p.get("noisy_queries"):
            parts.append(f"with {dp['mechanism']} noise as in training")
        return "queries unmixed, " + (", ".join(parts) or "unmasked (m = 0)")


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
