"""``dchi-text``, ``dchi-token`` and ``dchi-sequence``: d_chi-privacy over the encoder's embedding space (Qu et al.
2021, section 3).

A mechanism ``M`` is eta-d_chi-private if ``P(M(x) in S) <= exp(eta d(x, x')) P(M(x') in S)`` (eq. 1), with ``d``
the Euclidean distance between token embeddings (summed over positions) or between sentence representations. The
user privatizes before anything leaves the device:

* ``dchi-text`` (text-to-text): ``M_txt``, each token's embedding plus noise ``N`` (density ``exp(-eta ||N||)``),
  mapped back to the nearest vocabulary token; the provider encodes the privatized text;
* ``dchi-token`` (token representations): ``M_rep``, the noisy token embeddings themselves;
* ``dchi-sequence`` (sequence representation): ``M_seq``, the user-side sentence representation plus noise.

The mechanisms are :mod:`privnlu.mechanisms.dchi`; :meth:`DchiScheme.release_features` is a whole split as the
provider's frozen encoder sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import PrivnluError
from ..options import OPTIONS
from ..params import ETA, param
from .base import Guarantee, ThreatModel
from .kinds import FeatureRelease, ReleasedOnceScheme
from .registry import register

__all__ = ["DchiScheme", "DchiSequence", "DchiText", "DchiToken", "FeatureRelease"]


@dataclass(frozen=True)
class DchiScheme(ReleasedOnceScheme):
    """A d_chi release at ``eta`` (see the module docstring)."""

    paper = "Qu et al. 2021"
    formal = "metric-dp"
    known_leakage = ("d_chi bounds how distinguishable two inputs are by their embedding distance (eta d(x, x')); "
                     "nearest-neighbour inversion of the released tokens recovers a share that grows with eta "
                     "(docs/papers/qu2021.md).")
    #: the mechanism's name in :mod:`privnlu.mechanisms.dchi_text` (M_txt, M_rep, M_seq)
    mechanism: ClassVar[str] = ""
    unit: ClassVar[str] = "token"
    #: True if the mechanism noises each token (so that some tokens may come out unchanged)
    per_token: ClassVar[bool] = True
    #: the distance eta multiplies, in words
    metric: ClassVar[str] = ("d(x, x') = sum over positions of ||phi(x_i) - phi(x'_i)||_2 between token embeddings "
                             "(same length)")

    eta: float | None = param(OPTIONS["eta"])

    def validate(self) -> None:
        if self.eta is not None:
            ETA.require("eta", self.eta)
            object.__setattr__(self, "eta", float(self.eta))

    @property
    def label(self) -> str:
        return f"{self.name}-eta{self.eta:g}" if self.eta is not None else self.name

    def guarantee(self, *, model: str = "the encoder", **context: Any) -> Guarantee:
        self.require("eta")
        metric = self.metric
        return Guarantee("metric-dp", f"eta-d_chi (metric DP), eta = {self.eta:g} per {self.unit}: P(M(x) in S) <= "
                                      f"exp(eta d(x, x')) P(M(x') in S), {metric} of {model}; not an (epsilon, "
                                      "delta)-DP guarantee", eta=self.eta, unit=self.unit)

    def privatizer(self, *, model: Any = None, rng: Any = None, max_length: int = 128, hnsw: bool = False) -> Any:
        """The user-side :class:`~privnlu.mechanisms.dchi_text.DchiPrivatizer` of this scheme."""
        from ..mechanisms.dchi_text import DchiPrivatizer

        self.require("eta")
        return DchiPrivatizer.load(eta=self.eta, mechanism=self.mechanism, model=model, rng=rng,
                                   max_length=max_length, hnsw=hnsw)

    def ledger_entry(self, *, calibration: Any = None, model: str = "the encoder") -> dict[str, Any]:
        g = self.guarantee(model=model)
        return {"guarantee": "metric-dp", "mechanism": self.name, "eta": g.eta, "meaning": g.text}

    def release_space(self, encoder: Any) -> Any:
        """The encoder's token-embedding space (:class:`~privnlu.mechanisms.dchi.TokenSpace`); special tokens and
        padding are never noised (:func:`privnlu.mechanisms.dchi.privatized_positions`)."""
        from ..mechanisms.dchi import TokenSpace

        return TokenSpace.from_model(encoder.model, encoder.tokenizer)

    # -- the audit grid: one point per --dchi-targets, eta calibrated for each

    @classmethod
    def audit_points(cls, settings: Any) -> list[dict[str, Any]]:
        return [{"target": t} for t in settings.dchi_targets]

    @classmethod
    def audit_point_name(cls, point: dict[str, Any]) -> str:
        return f"{cls.name}-t{point['target']:g}"

    @classmethod
    def audit_scheme(cls, point: dict[str, Any], settings: Any, *, eta: float | None = None) -> "DchiScheme":
        return cls(eta=eta)

    @classmethod
    def audit_check(cls, settings: Any) -> None:
        if settings.mode == "joint":
            raise PrivnluError("d_chi schemes are audited in frozen mode only; for joint fine-tuning under d_chi use "
                               "'privnlu dchi finetune', or pass --schemes without the dchi-* ones")

    # -- the model card

    def card_block(self, privacy: dict, *, joint: bool) -> dict[str, Any]:
        eta = {"dchi_eta": privacy["eta"]} if privacy.get("eta") is not None else {}
        return {**eta, "formal_guarantee": "none"}

    def card_rows(self, privacy: dict) -> list[str]:
        return [f"| d_chi eta | {privacy['eta']} |"] if privacy.get("eta") is not None else []

    def card_query(self, privacy: dict) -> str:
        from ..models.saving import ENCODER_DRAWS

        return (f"Each query is privatized on the user's side with {self.name} at eta = {privacy.get('eta')}; a "
                f"prediction averages {ENCODER_DRAWS} privatizations seeded by the query (deterministic; "
                "`--samples N`: N fresh ones).")


@register
@dataclass(frozen=True)
class DchiText(DchiScheme):
    """Text-to-text privatization (``M_txt``)."""

    name = "dchi-text"
    title = "d_chi text-to-text"
    aliases = ("text", "dchi-txt")
    level = "text"
    mechanism = "text"
    finetune_mode = "text"
    threat = ThreatModel(
        releases="the privatized text (nearest vocabulary token of each noisy token embedding)",
        adversary="the provider, or anyone who receives the privatized text, knowing the vocabulary and eta",
        query="privatized the same way on the user's side, fresh noise",
        attacks=("text-search",),
        audit_attack="search on the privatized text's embedding",
    )

    def release_features(self, encoder, space, ds, clean, rng, **kw) -> FeatureRelease:
        return _token_release(self, encoder, space, ds, rng, **kw)


@register
@dataclass(frozen=True)
class DchiToken(DchiScheme):
    """Token-representation privatization (``M_rep``)."""

    name = "dchi-token"
    title = "d_chi token-rep"
    aliases = ("rep", "token", "dchi-rep")
    level = "token-embeddings"
    mechanism = "rep"
    finetune_mode = "token"
    threat = ThreatModel(
        releases="the noisy token embeddings (special tokens unnoised)",
        adversary="the provider, or anyone who receives them, knowing the embedding table and eta",
        query="privatized the same way on the user's side, fresh noise",
        attacks=("token-inversion",),
        audit_attack="nearest-token inversion, then search",
    )

    def release_features(self, encoder, space, ds, clean, rng, **kw) -> FeatureRelease:
        return _token_release(self, encoder, space, ds, rng, **kw)


@register
@dataclass(frozen=True)
class DchiSequence(DchiScheme):
    """Sentence-representation privatization (``M_seq``)."""

    name = "dchi-sequence"
    title = "d_chi sequence-rep"
    aliases = ("sequence",)
    level = "sentence-representation"
    mechanism = "sequence"
    finetune_mode = "sequence"
    unit = "sentence representation"
    per_token = False
    metric = "d(x, x') = ||h(x) - h(x')||_2 between sentence representations"
    threat = ThreatModel(
        releases="the user-side sentence representation plus d_chi noise",
        adversary="the provider, or anyone who receives it, knowing the encoder and eta",
        query="the noisy sentence representation, fresh noise",
        attacks=("search",),
        audit_attack="similarity search on the noisy representation",
    )

    def release_features(self, encoder, space, ds, clean, rng, **kw) -> FeatureRelease:
        from ..mechanisms.dchi import m_seq

        self.require("eta")
        return FeatureRelease(m_seq(clean.float(), self.eta, rng))


def _token_release(scheme: DchiScheme, enc: Any, space: Any, ds: Any, rng: Any, *, max_length: int,
                   batch_size: int = 64, keep: Any = None, progress: bool = True, desc: str = "") -> FeatureRelease:
    """Text-to-text (``h(M_txt(x))``, the privatized ids through the encoder) or token-rep (``h`` from
    ``M_rep(x)`` fed as input embeddings; the encoder adds position embeddings), batch by batch."""
    import torch
    from tqdm.auto import tqdm

    from ..mechanisms.dchi import privatized_positions
    from ..mechanisms.dchi_modes import mechanism
    from ..models.encoder import pool

    scheme.require("eta")
    eta = float(scheme.eta)  # type: ignore[arg-type]
    keep_set = set(keep.tolist()) if keep is not None else set()
    out, rel = [], FeatureRelease(torch.empty(0))
    bar = tqdm(range(0, len(ds), batch_size), desc=desc or f"{scheme.name} eta={eta:.3g}", disable=not progress,
               leave=False)
    with torch.no_grad():
        for s in bar:
            a = ds.texts_a[s: s + batch_size]
            b = ds.texts_b[s: s + batch_size] if ds.texts_b is not None else None
            tok = enc.tokenize(a, b, max_length=max_length)
            ids, mask, types = tok["input_ids"], tok["attention_mask"], tok.get("token_type_ids")
            pos = privatized_positions(space, ids, mask)
            rel.privatized += int(pos.sum())
            mech = mechanism(scheme.mechanism)
            new = mech.tokens(space, ids, eta, rng, mask)
            if mech.sends_tokens:
                rel.surviving += int((new[pos] == ids[pos]).sum())
                h = enc(new, mask, types)
            else:
                o = enc.model(inputs_embeds=new.to(enc.device), attention_mask=mask.to(enc.device),
                              token_type_ids=None if types is None else types.to(enc.device))
                h = pool(o, mask.to(enc.device), enc.pooling)
            out.append(h.float().cpu())
            for i in range(len(a)):
                if s + i in keep_set:
                    rel.kept[s + i] = (ids[i], mask[i], new[i])
    rel.features = torch.cat(out) if out else torch.zeros(0, enc.dim)
    return rel
