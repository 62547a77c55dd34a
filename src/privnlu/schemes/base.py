"""What every privacy scheme declares: its name, parameters, guarantee and threat model (:class:`Scheme`).

A scheme is a frozen dataclass whose fields are its parameters, each declared with :func:`param` (an
:class:`~privnlu.params.Option`: flag, type, range, default, help). Class attributes say what the scheme is: its
canonical ``name`` and deprecated ``aliases``, the ``level`` it privatizes at, the kind of ``formal`` guarantee,
and its :class:`ThreatModel` (what the owner releases, what a query goes through, which attacks apply).

Nothing here imports torch: the command line builds its options from these declarations.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

from ..errors import PrivnluError
from ..params import Option

#: the levels a scheme privatizes at
LEVELS = ("none", "representation", "text", "token-embeddings", "sentence-representation")
#: the kinds of formal guarantee: none, (epsilon, delta)-DP per example, eta-d_chi (metric DP)
GUARANTEES = ("none", "dp", "metric-dp")


@dataclass(frozen=True)
class Guarantee:
    """A scheme's formal guarantee for one release: its kind, its numbers, and one sentence."""

    kind: str  # one of GUARANTEES
    text: str
    epsilon: float | None = None
    delta: float | None = None
    eta: float | None = None
    unit: str = "example"

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class ThreatModel:
    """What a scheme exposes and to whom.

    ``releases``: what leaves the data owner. ``adversary``: who sees it and what they know. ``query``: what a
    query goes through at prediction time. ``attacks``: the registered attacks that apply, strongest first (the
    audit runs the first, then the checks after it); ``audit_attack``: the first, in words.
    """

    releases: str
    adversary: str
    query: str
    attacks: tuple[str, ...]
    audit_attack: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Scheme:
    """A privacy scheme with its parameters (see the module docstring); ``validate()`` runs on construction."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    paper: ClassVar[str] = ""
    level: ClassVar[str] = "none"
    #: when the owner's data is privatized: never ("none"; "model": only a privately trained model is released, DP-SGD),
    #: per training batch with fresh one-time keys
    #: ("per-batch", representation encodings), or once before training ("once", d_chi releases)
    release: ClassVar[str] = "none"
    formal: ClassVar[str] = "none"
    #: True if ``privnlu federated`` runs it (each client privatizes its own batches)
    federated: ClassVar[bool] = False
    threat: ClassVar[ThreatModel]
    #: what privnlu's measurements say about this scheme's leakage, in words (no numbers: those belong to a
    #: measurement of one release)
    known_leakage: ClassVar[str] = ""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check the parameters (PrivnluError, one line); subclasses normalise them here too."""

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        """The declared parameters, in field order."""
        return tuple(f.metadata["option"] for f in fields(cls))

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """Parameters without a default (a release needs them)."""
        return tuple(f.name for f in fields(cls) if f.default is MISSING or f.default is None)

    def params(self) -> dict[str, Any]:
        """The parameters as JSON values."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **self.params()}

    @property
    def variant(self) -> str:
        """The name results records group runs by (``baseline``, ``texthide-intra``, ...)."""
        return self.name

    @property
    def label(self) -> str:
        """A file-name-safe identifier of the scheme and its settings."""
        return self.variant

    @property
    def key_material(self) -> bool:
        """True if a release under these settings has a secret key the owner must keep (a mask pool)."""
        return False

    def describe(self) -> str:
        """One sentence: the scheme and its settings."""
        settings = ", ".join(f"{k} = {v}" for k, v in self.params().items())
        return f"{self.title}" + (f" ({settings})" if settings else "")

    def guarantee(self, **context: Any) -> Guarantee:
        """The formal guarantee of a release under these settings (the kind ``none`` by default)."""
        return Guarantee("none", f"none ({self.title} has no formal guarantee)")

    def check_received(self, record: dict | None, *, where: str) -> None:
        """Refuse (one line naming ``where``) a received model's privacy record (``privacy.dp`` of a ``privnlu.json``)
        whose guarantee this scheme's own mechanism does not give; nothing to check by default."""

    def require(self, *names: str) -> None:
        """PrivnluError unless every named parameter is set (a release needs them)."""
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            flags = ", ".join(next(o.flags[0] for o in self.options() if o.dest == n) for n in missing)
            raise PrivnluError(f"scheme {self.name} needs {flags}")
