"""The kinds of release a scheme makes, as abstract bases of :class:`~.base.Scheme`.

* :class:`EncodingScheme`: the owner releases fresh encodings of every training batch (one-time keys), and a query
  goes through the same encoding (TextHide, DP instance encoding);
* :class:`ReleasedOnceScheme`: each example is privatized once on the user's side before anything leaves it, and
  every query is privatized the same way (the d_chi schemes, or any local randomizer);
* :class:`ModelScheme`: nothing of the data leaves the owner, only a model trained privately (DP-SGD).

The engine, the audit, the model card and ``privnlu predict`` call the methods of :class:`~.base.Scheme`; each kind
supplies what is common to its schemes, each scheme the rest. A new scheme subclasses a kind and registers itself
(:func:`~.registry.register`, or :func:`~.registry.registered` for a scheme that lives only for a while).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import PrivnluError
from ..params import check_k
from .base import Scheme
from .registry import SCHEMES


@dataclass
class FeatureRelease:
    """A split released once as the provider's encoder sees it: one representation per row, and for the kept
    rows (the audited private sentences) what the attacker sees: (token ids, attention mask, released tensor)."""

    features: Any
    kept: dict[int, tuple[Any, Any, Any]] = field(default_factory=dict)
    surviving: int = 0  # privatized tokens left unchanged (text-to-text)
    privatized: int = 0  # privatized token positions


@dataclass(frozen=True)
class EncodingScheme(Scheme):
    """Fresh encodings of every training batch; a query is encoded as in evaluation."""

    release: ClassVar[str] = "per-batch"

    @property
    def n_private(self) -> int:
        """Private examples per encoding (a batch must hold at least as many)."""
        return 1

    def check_run(self, *, mode: str, batch_size: int) -> None:
        check_k(self.n_private, batch_size)

    def hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> Any:
        raise NotImplementedError

    def release_hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> Any:
        """The encoder of a release of ``epochs`` passes over a split (``privnlu encode``)."""
        return self.hider(dim=dim, rng=rng, epochs=epochs, public=public, pool=pool)

    def released_what(self, dim: int) -> str:
        return f"({dim}-d encodings)"


@dataclass(frozen=True)
class ReleasedOnceScheme(Scheme):
    """Each example privatized once on the user's side; every query privatized the same way, fresh noise."""

    release: ClassVar[str] = "once"

    def check_run(self, *, mode: str, batch_size: int) -> None:
        if mode != "frozen":
            raise PrivnluError(f"{self.name} releases privatized data once, which a frozen encoder's head is "
                               "trained on; to fine-tune the encoder under d_chi use 'privnlu dchi finetune'")

    @classmethod
    def audit_check(cls, settings: Any) -> None:
        if settings.mode == "joint":
            raise PrivnluError(f"{cls.name} releases the data once and is audited in frozen mode only; pass --schemes "
                               "without it")

    def release_space(self, encoder: Any) -> Any:
        """What the release needs of the encoder besides itself (d_chi: its token-embedding space); None here."""
        return None

    def release_features(self, encoder: Any, space: Any, ds: Any, clean: Any, rng: Any, *, max_length: int,
                         batch_size: int = 64, keep: Any = None, progress: bool = True,
                         desc: str = "") -> FeatureRelease:
        """Every row of ``ds`` privatized once on the user's side, as the provider's frozen ``encoder`` represents
        it (``clean``: the clean representations; ``space``: :meth:`release_space`)."""
        raise NotImplementedError

    def release_data(self, encoder: Any, splits: dict[str, tuple[Any, Any]], rng: Any, *, keep: Any = None,
                     max_length: int = 128, batch_size: int = 64, progress: bool = True) -> dict[str, Any]:
        space = self.release_space(encoder)
        return {s: self.release_features(encoder, space, ds, x, rng, keep=keep if s == "train" else None,
                                         desc=f"{self.label} {s}", max_length=max_length, batch_size=batch_size,
                                         progress=progress)
                for s, (ds, x) in splits.items()}

    def head_scheme(self) -> Scheme:
        return SCHEMES["none"]()

    def query_privatizer(self) -> Scheme | None:
        return self

    def released_what(self, dim: int) -> str:
        return f"({dim}-d noisy representation)"

    def card_query(self, privacy: dict) -> str:
        from ..models.saving import ENCODER_DRAWS

        return (f"Each query is privatized on the user's side with {self.describe()}; a prediction averages "
                f"{ENCODER_DRAWS} privatizations seeded by the query (deterministic; `--samples N`: N fresh ones).")


@dataclass(frozen=True)
class ModelScheme(Scheme):
    """Nothing of the data is released: only a model trained privately."""

    release: ClassVar[str] = "model"
    releases_data: ClassVar[bool] = False

    def release_hider(self, **kwargs: Any) -> Any:
        raise PrivnluError(self._no_release())

    def calibrate(self, **kwargs: Any) -> Any:
        raise PrivnluError(self._no_release())

    def _no_release(self) -> str:
        return (f"{self.name} releases no data, only a model trained privately: use privnlu train --scheme "
                f"{self.name}")

    def describe_queries(self, privacy: dict, *, joint: bool, hider: Any, key_source: str | None,
                         federated: bool) -> str:
        g = self.guarantee(calibration=privacy.get("dp"), joint=joint)
        return f"queries as raw sentence representations; guarantee: {g.text}"
