"""What every privacy scheme declares: its name, parameters, guarantee and threat model (:class:`Scheme`).

A scheme is a frozen dataclass whose fields are its parameters, each declared with :func:`param` (an
:class:`~privnlu.params.Option`: flag, type, range, default, help). Class attributes say what the scheme is: its
canonical ``name`` and deprecated ``aliases``, the ``level`` it privatizes at, the kind of ``formal`` guarantee,
and its :class:`ThreatModel` (what the owner releases, what a query goes through, which attacks apply).

Its methods are the protocol the engine, the audit, the ledger, the model card and ``privnlu predict`` call (rather
than compare ``release``, ``formal`` or ``level``): the defaults here are those of a clean release, and the release
kinds of :mod:`.kinds` supply the rest (docs/design/schemes.md).

Nothing here imports torch: the command line builds its options from these declarations.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import PrivnluError
from ..params import Option

if TYPE_CHECKING:
    from dp_accounting import DpEvent

#: the levels a scheme privatizes at
LEVELS = ("none", "representation", "text", "token-embeddings", "sentence-representation")
#: the kinds of formal guarantee: none, (epsilon, delta)-DP per example, eta-d_chi (metric DP)
GUARANTEES = ("none", "dp", "metric-dp")
#: what the ledger says of a release without a formal guarantee
NO_GUARANTEE = "no formal guarantee"


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

    def dp_event(self, **context: Any) -> DpEvent | None:
        """The ``dp_accounting`` event of a release under these settings (:mod:`privnlu.accounting`), or None where
        the release has no (epsilon, delta) guarantee (the default)."""
        return None

    # -- the protocol: what the engine, the audit, the card and predict ask of a scheme. The defaults are those of a
    # scheme that releases the clean representations (``none``); the kinds in :mod:`.kinds` override them.

    #: True if something of the data (representations, text) leaves the owner; False if only a trained model does
    releases_data: ClassVar[bool] = True
    #: False for the one scheme that privatizes nothing (``none``)
    private: ClassVar[bool] = True
    #: the fine-tuning mode of Qu et al.'s Table 4 that runs this scheme (``privnlu dchi finetune``), if any
    finetune_mode: ClassVar[str | None] = None

    @property
    def warning(self) -> str | None:
        """The line the command line prints before work when the chosen settings are not what they claim."""
        return None

    @property
    def mixes_public(self) -> bool:
        """True if the release mixes in a public corpus (whose representations the engine then prepares)."""
        return False

    def record_fields(self) -> dict[str, Any]:
        """The ``m`` and ``k`` every results record has (``"0"`` and 1 without per-batch encodings)."""
        return {"m": "0", "k": 1}

    def check_run(self, *, mode: str, batch_size: int) -> None:
        """Refuse (one line, before any work) a training run in ``mode`` with batches of ``batch_size``."""

    def hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> Any:
        """The per-batch encoder of private representations for ``epochs`` passes, or None (training sees the
        representations as prepared)."""
        return None

    def release_data(self, encoder: Any, splits: dict[str, tuple[Any, Any]], rng: Any, *, keep: Any = None,
                     max_length: int = 128, batch_size: int = 64, progress: bool = True) -> dict[str, Any] | None:
        """Each split (``{name: (dataset, clean representations)}``) as it is released once before training, as
        the provider's encoder represents it (``{name: FeatureRelease}``; ``keep``: train rows whose released form
        the caller keeps), or None where the data are not released once."""
        return None

    def head_scheme(self) -> Scheme:
        """The scheme a head trains under on this scheme's released data (itself; the data released once are
        already private)."""
        return self

    def private_training(self) -> dict[str, Any] | None:
        """The privacy parameters of a private optimizer (DP-SGD's epsilon, delta, clip, accountant), or None."""
        return None

    def record_dp(self) -> dict[str, Any] | None:
        """The ``dp`` block of a run's spec in its results record (None without a DP guarantee)."""
        return None

    def joint_warning(self) -> str | None:
        """The warning for a run that fine-tunes the encoder on the private data, where that voids the guarantee."""
        return None

    def ledger_train_refusal(self) -> str | None:
        """Why ``train --ledger`` cannot record this scheme's release (None: it can)."""
        return None

    def ledger_entry(self, *, calibration: Any = None, model: str = "the encoder") -> dict[str, Any]:
        """The ledger's fields of a release under these settings (:class:`~.ledger.Release`: ``guarantee``,
        ``mechanism``, ``epsilon``, ``delta``, ``events``, ``eta``, ``meaning``); ``calibration``: the release's noise
        calibration, ``model``: the encoder whose space a metric guarantee is over. No formal guarantee here."""
        return {"guarantee": "none", "mechanism": self.label, "meaning": NO_GUARANTEE}

    def required_dp_event(self, calibration: dict) -> list[dict]:
        """The release's DP event (:meth:`dp_event`) as the ledger writes it; PrivnluError (one line) where it has
        none."""
        from ..accounting import event_to_json

        event = self.dp_event(calibration=calibration)
        if event is None:
            raise PrivnluError(f"the ledger records a {self.name} release only with a finite (epsilon, delta): "
                               f"{calibration.get('label') or 'this release has none'}; nothing was written")
        return [event_to_json(event)]

    def release_calibration(self, *, dim: int, epochs: int) -> Any:
        """The noise calibration of a release of ``epochs`` passes at width ``dim`` (None without noise)."""
        return None

    def attack_mechanism(self, *, dim: int, epochs: int) -> Any:
        """The noise mechanism an attack on ``epochs`` encodings of each example simulates (None without noise)."""
        return None

    def released_what(self, dim: int) -> str:
        """What the release of one sentence is, in words (an audit example's ``released``)."""
        return "(its clean representation)"

    # -- the audit grid

    @classmethod
    def audit_points(cls, settings: Any) -> list[dict[str, Any]]:
        """The audit grid's points of this scheme under ``settings`` (an :class:`~privnlu.audit.grid.AuditSettings`):
        each a dict of a grid point's fields (``m``, ``k``, ``epsilon``, ``target``)."""
        return [{}]

    @classmethod
    def audit_point_name(cls, point: dict[str, Any]) -> str:
        """A point's file-name-safe identifier."""
        return cls.name

    @classmethod
    def audit_scheme(cls, point: dict[str, Any], settings: Any, *, eta: float | None = None) -> Scheme:
        """The scheme of a point with every parameter set (``eta``: a d_chi point's calibrated eta)."""
        return cls()

    @classmethod
    def audit_check(cls, settings: Any) -> None:
        """Refuse audit settings this scheme cannot be audited under."""

    def audit_train(self, train: Any, settings: Any) -> Any:
        """The training configuration of an audited run (DP-SGD trains at its own batch size and rate)."""
        return train

    # -- the model card and prediction

    def card_tags(self) -> list[str]:
        """The model card's tags of the guarantee (after the task tags)."""
        return []

    def card_block(self, privacy: dict, *, joint: bool) -> dict[str, Any]:
        """The scheme's keys of the card's YAML ``privacy`` block (a model's ``privnlu.json`` privacy block)."""
        return {"formal_guarantee": "none"}

    def card_rows(self, privacy: dict) -> list[str]:
        """The scheme's rows of the card's Privacy table."""
        return []

    def card_query(self, privacy: dict) -> str:
        """How ``privnlu predict`` transforms a query, in words."""
        return "Queries go to the head as raw sentence representations; predictions are deterministic."

    def query_encoder(self, privacy: dict, *, dim: int, pool: Any, rng: Any) -> Any:
        """A hider whose ``mask_only`` is the run's evaluation-time query encoding, or None (raw representations)."""
        return None

    def query_privatizer(self) -> Scheme | None:
        """The scheme that privatizes each query on the user's side (a scheme released once), or None."""
        return None

    def describe_queries(self, privacy: dict, *, joint: bool, hider: Any, key_source: str | None,
                         federated: bool) -> str:
        """``privnlu predict``'s words for how a query is encoded."""
        return "queries unmixed, raw sentence representations"

    def require(self, *names: str) -> None:
        """PrivnluError unless every named parameter is set (a release needs them)."""
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            flags = ", ".join(next(o.flags[0] for o in self.options() if o.dest == n) for n in missing)
            raise PrivnluError(f"scheme {self.name} needs {flags}")
