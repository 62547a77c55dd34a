"""The attacker's capabilities: what an attacker is granted, and nothing else.

:class:`Capabilities` is an immutable, named set of :class:`Grant` values (the attacker's side of a threat
model; what a scheme releases is :class:`privnlu.schemes.base.ThreatModel`). An attack declares the grants it
needs (``Attack.requires``); an auditor builds an :class:`AttackerView` holding exactly the granted material and
hands only that view to the attack. The view refuses any field that was not granted and any
defender key material (:class:`~privnlu.mechanisms.release.KeyRecord`,
:class:`~privnlu.mechanisms.texthide.MaskPool`, a ``TextHide`` object or a
:class:`~privnlu.mechanisms.texthide.HiddenBatch`): an attacker object can never
hold the defender's secrets, by construction.

Ground truth for scoring stays with the auditor (the ``audit`` module of each attack family); it is never part
of a view.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar

import torch

from ..errors import PrivnluError


class Grant(str, Enum):
    """One piece of knowledge an attacker may be granted."""

    ENCODINGS = "encodings"  # the released (privatized) vectors, SharedPayload.x
    MIXED_LABELS = "mixed_labels"  # the released mixed labels, SharedPayload.y
    SCHEME = "scheme"  # the public parameters of the scheme (m, k, d, epochs): Kerckhoffs' principle
    ENCODER = "encoder"  # the representation model h (to embed any text it likes)
    PUBLIC_CORPUS = "public_corpus"  # a public text corpus, disjoint from the private data
    CANDIDATES = "candidates"  # a candidate corpus that contains the private sentences (worst case for search)
    AUXILIARY = "auxiliary"  # labelled data from the private data's distribution (not the private examples)
    KNOWN_PAIRS = "known_pairs"  # (original, encoding) pairs under the defender's key: a known-plaintext attack
    QUERY = "query"  # black-box query access to the released model: its logits for any input the attacker chooses
    TRAINING_RECIPE = "training_recipe"  # the public training procedure, run on the attacker's own data (Kerckhoffs)


@dataclass(frozen=True)
class Capabilities:
    """An immutable statement of what the attacker knows: a name and the grants it holds."""

    name: str
    grants: frozenset[Grant]
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "grants", frozenset(Grant(g) for g in self.grants))

    def allows(self, grant: Grant) -> bool:
        return grant in self.grants

    def require(self, *needed: Grant, attack: str = "this attack") -> None:
        missing = [g.value for g in needed if g not in self.grants]
        if missing:
            raise PrivnluError(f"{attack} needs the threat model to grant: {', '.join(missing)}")

    def to_json(self) -> dict:
        return {"name": self.name, "grants": sorted(g.value for g in self.grants), "description": self.description,
                "key_material": False}


@dataclass(frozen=True)
class Corpus:
    """Texts with their representations under the attacker's encoder (and labels where known)."""

    texts: list[str]
    x: torch.Tensor
    labels: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.x.ndim != 2 or self.x.shape[0] != len(self.texts):
            raise PrivnluError(f"corpus: {len(self.texts)} texts but representations of shape {tuple(self.x.shape)}")
        if self.labels is not None and len(self.labels) != len(self.texts):
            raise PrivnluError("corpus: texts and labels have different lengths")

    def __len__(self) -> int:
        return len(self.texts)


# which grant each view field needs
_FIELD_GRANT = {
    "encodings": Grant.ENCODINGS,
    "mixed_labels": Grant.MIXED_LABELS,
    "scheme": Grant.SCHEME,
    "encoder": Grant.ENCODER,
    "public": Grant.PUBLIC_CORPUS,
    "candidates": Grant.CANDIDATES,
    "auxiliary": Grant.AUXILIARY,
    "known_pairs": Grant.KNOWN_PAIRS,
    "query": Grant.QUERY,
    "train_reference": Grant.TRAINING_RECIPE,
}


def _is_key_material(obj: Any) -> bool:
    from ..mechanisms.release import KeyRecord
    from ..mechanisms.texthide import HiddenBatch, MaskPool, TextHide

    return isinstance(obj, (KeyRecord, MaskPool, TextHide, HiddenBatch))


@dataclass(frozen=True)
class AttackerView:
    """Everything one attacker is given; each non-empty field must be granted by ``capabilities``.

    * ``encodings`` (N, d) and ``mixed_labels`` (N, c): the release;
    * ``scheme``: public parameters, e.g. ``{"m": "256", "k": 4, "dim": 384}``;
    * ``encoder``: a callable texts -> representations (the attacker's copy of h);
    * ``public`` / ``candidates`` / ``auxiliary``: :class:`Corpus` objects;
    * ``known_pairs``: ``(originals, encodings)`` tensors encoded under the defender's key;
    * ``query``: a callable inputs -> logits of the released (target) model, inputs being rows like ``Corpus.x``;
    * ``train_reference``: a callable ``(x, labels) -> query`` that trains one model with the public recipe.
    """

    capabilities: Capabilities
    encodings: torch.Tensor | None = None
    mixed_labels: torch.Tensor | None = None
    scheme: dict = field(default_factory=dict)
    encoder: Any = None
    public: Corpus | None = None
    candidates: Corpus | None = None
    auxiliary: Corpus | None = None
    known_pairs: tuple[torch.Tensor, torch.Tensor] | None = None
    query: Any = None
    train_reference: Any = None

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "capabilities":
                continue
            value = getattr(self, f.name)
            if value is None or (isinstance(value, dict) and not value):
                continue
            parts = value if isinstance(value, (tuple, list)) else (value,)
            if isinstance(value, dict):
                parts = tuple(value.values())
            if any(_is_key_material(p) for p in parts):
                raise PrivnluError(f"attacker view: '{f.name}' holds defender key material; an attacker never gets it")
            if not self.capabilities.allows(_FIELD_GRANT[f.name]):
                raise PrivnluError(f"attacker view: '{f.name}' is not granted by threat model "
                                   f"'{self.capabilities.name}'")
        if self.encodings is not None:
            if self.encodings.ndim != 2:
                raise PrivnluError(f"encodings must be an (N, d) matrix, not shape {tuple(self.encodings.shape)}")
            if self.mixed_labels is not None and len(self.mixed_labels) != len(self.encodings):
                raise PrivnluError(f"{len(self.encodings)} encodings but {len(self.mixed_labels)} mixed labels")
            dim = self.encodings.shape[1]
            for name in ("public", "candidates", "auxiliary"):
                c = getattr(self, name)
                if c is not None and c.x.shape[1] != dim:
                    raise PrivnluError(f"attack data have mismatched dimensions: encodings are {dim}-d, the {name} corpus {c.x.shape[1]}-d")
        if self.known_pairs is not None:
            a, b = self.known_pairs
            if a.shape != b.shape or a.ndim != 2:
                raise PrivnluError("known pairs: originals and encodings must be (N, d) matrices of the same shape")
            if self.encodings is not None and a.shape[1] != self.encodings.shape[1]:
                raise PrivnluError(f"attack data have mismatched dimensions: encodings are {self.encodings.shape[1]}-d, known pairs {a.shape[1]}-d")

    def need(self, name: str) -> Any:
        value = getattr(self, name)
        if value is None:
            raise PrivnluError(f"this attack needs '{name}' in the attacker view")
        return value


class Attack:
    """Base class: an attack declares its grants and acts on an :class:`AttackerView` only."""

    name: ClassVar[str] = "attack"
    requires: ClassVar[frozenset[Grant]] = frozenset()

    def check(self, view: AttackerView) -> None:
        view.capabilities.require(*sorted(self.requires, key=lambda g: g.value), attack=f"attack '{self.name}'")


# The capabilities of the attacks in this package (each attack's threat model)
SEARCH_THREAT = Capabilities(
    "similarity-search",
    frozenset({Grant.ENCODINGS, Grant.SCHEME, Grant.ENCODER, Grant.CANDIDATES}),
    "The attacker sees the released encodings, knows h and holds a corpus that contains the private "
    "sentences (worst case); it returns, per encoding, the corpus sentence whose representation is nearest by cosine.",
)
INVERSION_THREAT = Capabilities(
    "representation-inversion",
    frozenset({Grant.ENCODINGS, Grant.SCHEME, Grant.ENCODER, Grant.CANDIDATES, Grant.KNOWN_PAIRS}),
    "As similarity search, plus known (original, encoding) pairs of other examples under the same key "
    "(known plaintext), used to learn a map encoding -> original before searching.",
)
RECONSTRUCTION_THREAT = Capabilities(
    "reconstruction",
    frozenset({Grant.ENCODINGS, Grant.MIXED_LABELS, Grant.SCHEME, Grant.ENCODER, Grant.PUBLIC_CORPUS, Grant.AUXILIARY,
               Grant.CANDIDATES}),
    "Xie & Hong 2021: the attacker sees all encodings and mixed labels of a release, knows h, the public parameters "
    "(m, k, epochs) and the public corpus, and has same-distribution data; it does not know which examples were used. "
    "To map recovered vectors back to sentences it searches a corpus that contains the private sentences.",
)
SPAN_INVERSION_THREAT = Capabilities(
    "wire-span-inversion",
    frozenset({Grant.ENCODER, Grant.SCHEME}),
    "DAGER-class (Petrov et al. 2024): an honest-but-curious server or an eavesdropper holds one captured client "
    "message (its gradient arrays and declared batch size) and the model the server sent with it, and knows the "
    "public architecture, tokenizer and pretrained embedding tables (h); it holds no key, no client data, no pool "
    "mask and no embedding-table gradient.",
)
MEMBERSHIP_THREAT = Capabilities(
    "membership-inference",
    frozenset({Grant.QUERY, Grant.TRAINING_RECIPE, Grant.AUXILIARY, Grant.CANDIDATES}),
    "Carlini et al. 2022: the attacker queries the released model's logits, knows the public training recipe, holds "
    "same-distribution data disjoint from training, and asks which candidate sentences were training members.",
)
