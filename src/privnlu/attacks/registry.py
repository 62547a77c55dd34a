"""The one registry of attacks: name -> attack class, its capabilities, and where it is run from.

Every attack privnlu runs has one :class:`AttackEntry` in :data:`ATTACKS`, read by

* the schemes' threat models (``Scheme.threat.attacks`` lists registered names, strongest first);
* the audit (:mod:`privnlu.audit.run` runs the first registered name of a scheme's list on each grid point);
* :func:`privnlu.attack` (``kind``: an entry's ``command``, run on a task or on a shared file);
* the command line: ``privnlu attack COMMAND`` for every entry with a ``command``, and ``privnlu attack gradient
  --wire --method METHOD`` for every entry with a ``wire_method``.

Entries name their class and runners by ``"module:attribute"`` under :mod:`privnlu.attacks` and import them only
when asked (:meth:`AttackEntry.load`), so reading the registry (to build the command line, say) imports no torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import PrivnluError

#: the attack families, one sub-package each
FAMILIES = ("representation", "reconstruction", "gradient", "membership", "dchi", "privacy_audit")


def _resolve(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), attr)


@dataclass(frozen=True)
class AttackEntry:
    """One registered attack.

    ``target``: its :class:`~privnlu.attacks.threat.Attack` subclass (``"module:Class"``); ``capabilities``: the
    :class:`~privnlu.attacks.threat.Capabilities` it is run under where one is fixed (``"module:NAME"``);
    ``command``: its ``privnlu attack`` subcommand and :func:`privnlu.attack` kind; ``on_task`` / ``on_payload``:
    the runners (``(target, conditions, seed=..., **knobs)`` / ``(target, payload, **knobs)``) behind that kind;
    ``wire_method``: its ``privnlu attack gradient --wire --method`` value; ``audit``: the audit can run it on a
    release.
    """

    name: str
    family: str
    target: str
    summary: str
    capabilities: str | None = None
    command: str | None = None
    on_task: str | None = None
    on_payload: str | None = None
    wire_method: str | None = None
    audit: bool = False

    def load(self) -> type:
        """The attack class (imported now)."""
        return _resolve(self.target)

    @property
    def requires(self) -> frozenset:
        """The grants the attack class declares."""
        return self.load().requires

    def threat(self):
        """The :class:`~privnlu.attacks.threat.Capabilities` it runs under (None: set by its caller)."""
        return None if self.capabilities is None else _resolve(self.capabilities)

    def task_runner(self) -> Callable[..., dict]:
        if self.on_task is None:
            raise PrivnluError(f"attack '{self.name}' has no task run")
        return _resolve(self.on_task)

    def payload_runner(self) -> Callable[..., dict]:
        if self.on_payload is None:
            raise PrivnluError(f"attack '{self.name}' has no run on a shared file")
        return _resolve(self.on_payload)


def _entries(*entries: AttackEntry) -> dict[str, AttackEntry]:
    out: dict[str, AttackEntry] = {}
    for e in entries:
        if e.name in out or e.family not in FAMILIES:
            raise ValueError(f"attack registry: duplicate name or unknown family in {e}")
        out[e.name] = e
    return out


#: every attack, by name (the names the schemes' threat models use)
ATTACKS: dict[str, AttackEntry] = _entries(
    AttackEntry("search", "representation", "representation.search:SimilaritySearch",
                "FAISS similarity search with privatized representations (TextHide section 4.4)",
                capabilities="threat:SEARCH_THREAT", command="search", on_task="runs:search_task",
                on_payload="runs:search_payload", audit=True),
    AttackEntry("text-search", "representation", "representation.search:SimilaritySearch",
                "similarity search with the public encoder's embedding of privatized text",
                capabilities="threat:SEARCH_THREAT", audit=True),
    AttackEntry("inversion", "representation", "representation.inversion:RepresentationInversion",
                "learn encoding -> original with an MLP, then search (TextHide appendix C.3)",
                capabilities="threat:INVERSION_THREAT", command="invert", on_task="runs:invert_task"),
    AttackEntry("keyless-abs-head", "representation", "representation.keyless_head:KeylessAbsHead",
                "a classifier trained on |encodings| with the mixed labels, used on plain |h(x)| with no key"),
    AttackEntry("reconstruction", "reconstruction", "reconstruction.attack:ReconstructionAttack",
                "recover the private representations from a release (Xie & Hong 2021)",
                capabilities="threat:RECONSTRUCTION_THREAT", command="reconstruct", on_task="runs:reconstruct_task",
                on_payload="runs:reconstruct_payload_run", audit=True),
    AttackEntry("gradient-matching", "gradient", "gradient.matching:GradientMatchingAttack",
                "gradient-matching attack (DLG) on shared gradients (TextHide Table 2)", command="gradient"),
    AttackEntry("embedding-leak", "gradient", "gradient.embedding_leak:EmbeddingLeakAttack",
                "token sets from a client message's embedding-table gradient, then DLG on the head",
                capabilities="gradient.embedding_leak:EMBEDDING_LEAK_THREAT", wire_method="tokens"),
    AttackEntry("span-inversion", "gradient", "gradient.dager.attack:SpanInversionAttack",
                "DAGER-class: every client's sentences from the first two attention layers' gradients",
                capabilities="threat:SPAN_INVERSION_THREAT", wire_method="span"),
    AttackEntry("membership", "membership", "membership.inference:LiRA",
                "LiRA membership inference on a released model (Carlini et al. 2022)",
                capabilities="threat:MEMBERSHIP_THREAT"),
    AttackEntry("membership-loss", "membership", "membership.inference:LossAttack",
                "loss-threshold membership inference on a released model (Yeom et al. 2018)",
                capabilities="threat:MEMBERSHIP_THREAT"),
    AttackEntry("token-inversion", "dchi", "dchi.inversion:NearestNeighbourInversion",
                "nearest-token inversion of d_chi-noised token embeddings (Qu et al. 2021, Table 3)", audit=True),
)


def names() -> tuple[str, ...]:
    return tuple(ATTACKS)


def get(name: str) -> AttackEntry:
    """The entry named ``name``; an unknown name is refused with the registered ones."""
    try:
        return ATTACKS[name]
    except KeyError:
        raise PrivnluError(f"unknown attack '{name}'; registered: {', '.join(ATTACKS)}") from None


def load(name: str) -> type:
    """The attack class registered as ``name``."""
    return get(name).load()


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def commands() -> dict[str, AttackEntry]:
    """``privnlu attack`` subcommand -> entry, in registry order."""
    return {e.command: e for e in ATTACKS.values() if e.command}


def wire_methods() -> dict[str, AttackEntry]:
    """``privnlu attack gradient --wire --method`` value -> entry."""
    return {e.wire_method: e for e in ATTACKS.values() if e.wire_method}


def audit_names() -> tuple[str, ...]:
    """The attacks the audit can run on a release."""
    return tuple(n for n, e in ATTACKS.items() if e.audit)


def api_kinds() -> tuple[str, ...]:
    """The kinds :func:`privnlu.attack` takes (the commands with a task run)."""
    return tuple(c for c, e in commands().items() if e.on_task)


def payload_kinds() -> tuple[str, ...]:
    """The kinds :func:`privnlu.attack` runs on a shared file."""
    return tuple(c for c, e in commands().items() if e.on_payload)


def by_kind(kind: str, *, payload: bool = False) -> AttackEntry:
    """The entry behind :func:`privnlu.attack`'s ``kind`` (on a shared file with ``payload``)."""
    if payload and kind not in payload_kinds():
        raise PrivnluError(f"a shared file takes the {_or(list(payload_kinds()))} attack, not {kind}")
    if kind not in api_kinds():
        raise PrivnluError(f"unknown attack '{kind}'; choose {_or(list(api_kinds()))}")
    return commands()[kind]
