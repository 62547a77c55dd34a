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

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..options import OPTIONS
from ..params import ETA, param
from .base import Guarantee, Scheme, ThreatModel
from .registry import register



@dataclass
class FeatureRelease:
    """A split released under d_chi as the provider's encoder sees it: one representation per row, and for the kept
    rows (the audited private sentences) what the attacker sees: (token ids, attention mask, released tensor)."""

    features: Any
    kept: dict[int, tuple[Any, Any, Any]] = field(default_factory=dict)
    surviving: int = 0  # privatized tokens left unchanged (text-to-text)
    privatized: int = 0  # privatized token positions


@dataclass(frozen=True)
class DchiScheme(Scheme):
    """A d_chi release at ``eta`` (see the module docstring)."""

    paper = "Qu et al. 2021"
    release = "once"
    formal = "metric-dp"
    known_leakage = ("d_chi bounds how distinguishable two inputs are by their embedding distance (eta d(x, x')); "
                     "nearest-neighbour inversion of the released tokens recovers a share that grows with eta "
                     "(docs/papers/qu2021.md).")
    #: the mechanism's name in :mod:`privnlu.mechanisms.dchi_text` (M_txt, M_rep, M_seq)
    mechanism: ClassVar[str] = ""
    #: the fine-tuning mode of Qu et al.'s Table 4 (``privnlu dchi finetune``)
    finetune_mode: ClassVar[str] = ""
    unit: ClassVar[str] = "token"

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
        metric = ("d(x, x') = ||h(x) - h(x')||_2 between sentence representations" if self.unit != "token" else
                  "d(x, x') = sum over positions of ||phi(x_i) - phi(x'_i)||_2 between token embeddings (same length)")
        return Guarantee("metric-dp", f"eta-d_chi (metric DP), eta = {self.eta:g} per {self.unit}: P(M(x) in S) <= "
                                      f"exp(eta d(x, x')) P(M(x') in S), {metric} of {model}; not an (epsilon, "
                                      "delta)-DP guarantee", eta=self.eta, unit=self.unit)

    def privatizer(self, *, model: Any = None, rng: Any = None, max_length: int = 128, hnsw: bool = False) -> Any:
        """The user-side :class:`~privnlu.mechanisms.dchi_text.DchiPrivatizer` of this scheme."""
        from ..mechanisms.dchi_text import DchiPrivatizer

        self.require("eta")
        return DchiPrivatizer.load(eta=self.eta, mechanism=self.mechanism, model=model, rng=rng,
                                   max_length=max_length, hnsw=hnsw)

    def release_features(self, encoder: Any, space: Any, ds: Any, clean: Any, rng: Any, *, max_length: int,
                         batch_size: int = 64, keep: Any = None, progress: bool = True, desc: str = "") -> FeatureRelease:
        """Every row of ``ds`` privatized once on the user's side, as the provider's frozen ``encoder`` represents
        it (``clean``: the clean representations, which sequence-rep noises); special tokens and padding are never
        noised (:func:`privnlu.mechanisms.dchi.privatized_positions`)."""
        raise NotImplementedError


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

    from ..mechanisms.dchi import m_rep, m_txt, privatized_positions
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
            if scheme.mechanism == "text":
                new = m_txt(space, ids, eta, rng, mask)
                rel.surviving += int((new[pos] == ids[pos]).sum())
                h = enc(new, mask, types)
            else:
                new = m_rep(space, ids, eta, rng, mask)
                o = enc.model(inputs_embeds=new.to(enc.device), attention_mask=mask.to(enc.device),
                              token_type_ids=None if types is None else types.to(enc.device))
                h = pool(o, mask.to(enc.device), enc.pooling)
            out.append(h.float().cpu())
            for i in range(len(a)):
                if s + i in keep_set:
                    rel.kept[s + i] = (ids[i], mask[i], new[i])
    rel.features = torch.cat(out) if out else torch.zeros(0, enc.dim)
    return rel
