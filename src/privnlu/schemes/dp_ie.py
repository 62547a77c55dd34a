"""``dp-ie``: DP instance encoding (Xie & Hong 2022, Algorithm 1) with a sound guarantee.

Each encoding is ``e = sigma o (sum_j lambda_j clip(x_j)) + z``: clip every private representation, mix as TextHide
does, mask (``m > 0`` only; the paper's Algorithm 1 has ``m = 0``), add calibrated noise ``z``. ``correct``
calibration accounts the composition of every encoding an example takes part in over the whole release (``k`` per
pass, ``ceil(k/2)`` with a public corpus) with dp-accounting, for replace-one sensitivity ``2 C max_weight``;
``paper`` is the paper's per-encoding calibration (Theorems 3 and 4), which is **not** a valid guarantee for the
release. The mechanism, sensitivity and accounting are :mod:`privnlu.mechanisms.dp`.

``noise``: ``per-encoding`` (default) draws fresh noise for every encoding, as the paper's Theorems 3 and 4 analyse;
``per-batch`` adds one noise vector to every encoding of a batch, as Algorithm 1 is printed (lines 7 and 11). The
per-batch reading is **not DP**: the difference of two encodings of a batch carries no noise, so no finite epsilon
holds (:meth:`DPInstanceEncoding.guarantee` says so; the CLI warns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..choices import NOISE_READINGS
from ..errors import require_choice
from ..options import OPTIONS
from ..params import check_dp_settings, m_label, param, parse_m
from .base import Guarantee, ThreatModel
from .registry import register
from .texthide import K, M, TextHideIntra

if TYPE_CHECKING:
    from dp_accounting import DpEvent

#: why DP instance encoding gives no guarantee when the encoder is fine-tuned on the private data
JOINT_DP_CAVEAT = ("the encoder was fine-tuned with gradients of the clean private inputs, so one example changes the "
                   "encoder and through it every later encoding: the noise is calibrated for a fixed encoder, and "
                   "neither the encodings nor this model carry the DP guarantee")
#: the one-line warning the CLI prints when the per-batch reading is chosen
PER_BATCH_WARNING = ("WARNING: --dp-noise per-batch (Algorithm 1 as printed: one noise vector per batch) is NOT DP: the "
                     "difference of any two encodings of a batch is noise-free; no epsilon is claimed")

@register
@dataclass(frozen=True)
class DPInstanceEncoding(TextHideIntra):
    """Clip, mix, (mask,) add calibrated noise; (epsilon, delta)-DP per example for the whole release."""

    name = "dp-ie"
    title = "DP instance encoding"
    aliases = ("dp",)
    paper = "Xie & Hong 2022"
    formal = "dp"
    federated = False
    threat = ThreatModel(
        releases="the noisy encodings and the mixed labels (the labels are not covered by the guarantee)",
        adversary="anyone who receives the release, knowing the encoder, m, k and the noise distribution",
        query="clipped, masked with one pool mask and noised as in training (clean with --dp-clean-queries)",
        attacks=("reconstruction", "search"),
        audit_attack="reconstruction (Xie & Hong 2021), then search",
    )
    known_leakage = ("DP instance encoding bounds what any attack can learn about one training example's "
                     "representation (when the calibration is valid); the mixed labels are not protected.")

    m: float = param(M.but(default=0))
    k: int = param(K.but(default=4))
    mechanism: str = param(OPTIONS["mechanism"].but(default="gaussian"))
    epsilon: float = param(OPTIONS["epsilon"].but(default=8.0))
    delta: float = param(OPTIONS["delta"].but(default=1e-5))
    clip: float = param(OPTIONS["clip"].but(default=1.0))
    calibration: str = param(OPTIONS["calibration"].but(default="correct"))
    clean_queries: bool = param(OPTIONS["clean_queries"].but(default=False))
    inter: bool = param(OPTIONS["inter"].but(default=False))  # type: ignore[misc]
    noise: str = param(OPTIONS["noise"].but(default="per-encoding"))

    def validate(self) -> None:
        super().validate()
        check_dp_settings(self.mechanism, self.epsilon, self.delta, self.clip, self.calibration)
        require_choice("DP noise reading", self.noise, NOISE_READINGS)

    def params(self) -> dict[str, Any]:
        # the default reading is left out, so that every record made before the option keeps its parameters
        return {**super().params(), "mechanism": self.mechanism, "epsilon": self.epsilon, "delta": self.delta,
                "clip": self.clip, "calibration": self.calibration, "clean_queries": self.clean_queries,
                "inter": self.inter, **({"noise": self.noise} if self.noise != "per-encoding" else {})}

    @property
    def warning(self) -> str | None:
        """The line the CLI prints before work when the chosen reading is not DP (``None`` otherwise)."""
        return PER_BATCH_WARNING if self.noise == "per-batch" else None

    @property
    def settings(self) -> Any:
        """The mechanism's :class:`~privnlu.mechanisms.dp.DPSettings`."""
        from ..mechanisms.dp import DPSettings

        return DPSettings(mechanism=self.mechanism, epsilon=self.epsilon, delta=self.delta, clip=self.clip,
                          calibration=self.calibration, noisy_queries=not self.clean_queries)

    @property
    def variant(self) -> str:
        return "dp-" + super().variant

    @property
    def label(self) -> str:
        return f"{super().label}-{self.settings.label}" + ("-per-batch" if self.noise == "per-batch" else "")

    def calibrate(self, *, dim: int, epochs: int) -> Any:
        """The noise for a release of ``epochs`` passes over the data at width ``dim``
        (:class:`~privnlu.mechanisms.dp.Calibration`)."""
        return self.settings.calibrate(dim=dim, k=self.k, epochs=epochs, inter=self.inter, noise=self.noise)

    def hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> Any:
        """DP TextHide calibrated for ``epochs`` passes (each pass ``k`` encodings per example)."""
        from ..mechanisms.dp import DPTextHide

        return DPTextHide.from_settings(self.settings, self.m, self.k, dim=dim, rng=rng, epochs=epochs,
                                        public=public if self.inter else None, pool=pool, noise=self.noise)

    def release_calibration(self, *, dim: int, epochs: int) -> Any:
        return self.calibrate(dim=dim, epochs=epochs)

    def attack_mechanism(self, *, dim: int, epochs: int) -> Any:
        return self.calibrate(dim=dim, epochs=epochs).mechanism

    def released_what(self, dim: int) -> str:
        return f"({dim}-d noisy encodings)"

    def ledger_entry(self, *, calibration: Any = None, model: str = "the encoder") -> dict[str, Any]:
        """The whole release, from its :class:`~privnlu.mechanisms.dp.Calibration`."""
        cal = calibration.to_json()
        return {"guarantee": "dp", "mechanism": f"{self.name}-{calibration.mechanism.kind}-{calibration.calibration}",
                "epsilon": calibration.epsilon, "delta": calibration.delta, "events": self.required_dp_event(cal),
                "meaning": f"({calibration.epsilon:.4g}, {calibration.delta:g})-DP per example for the whole release "
                           f"({cal['label']})"}

    def record_dp(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self.settings)

    def joint_warning(self) -> str | None:
        return (f"warning: --scheme {self.name} with --mode joint gives no DP guarantee "
                f"({self.guarantee(joint=True).text}); use --mode frozen (or an encoder fine-tuned on public data) "
                "for a release with the guarantee")

    def ledger_train_refusal(self) -> str | None:
        return f"--ledger with {self.name}: record its encodings with privnlu dp encode --ledger"

    # -- the audit grid: one point per --dp-epsilons at --dp-point

    @classmethod
    def audit_points(cls, settings: Any) -> list[dict[str, Any]]:
        m, k = settings.dp_point
        return [{"m": parse_m(m), "k": k, "epsilon": e} for e in settings.dp_epsilons]

    @classmethod
    def audit_point_name(cls, point: dict[str, Any]) -> str:
        return f"{cls.name}-m{m_label(point['m'])}-k{point['k']}-eps{point['epsilon']:g}"

    @classmethod
    def audit_scheme(cls, point: dict[str, Any], settings: Any, *, eta: float | None = None) -> "DPInstanceEncoding":
        return cls(m=point["m"], k=point["k"], epsilon=point["epsilon"], mechanism=settings.dp_mechanism,
                   delta=settings.dp_delta, clip=settings.dp_clip)

    # -- the model card and prediction

    def card_tags(self) -> list[str]:
        return ["differential-privacy"]

    def card_block(self, privacy: dict, *, joint: bool) -> dict[str, Any]:
        p, dp = privacy, privacy.get("dp")
        block = super().card_block(p, joint=joint)
        del block["formal_guarantee"]
        if dp:
            block.update(dp_mechanism=dp.get("mechanism"), dp_target_epsilon=dp.get("target_epsilon"),
                         dp_delta=dp.get("delta"), dp_clip=dp.get("clip"), dp_clip_norm=dp.get("clip_norm"),
                         dp_calibration=dp.get("calibration"),
                         dp_accounted_epsilon=_round(dp.get("accounted_epsilon")), dp_noise=_round(dp.get("noise")),
                         dp_noisy_queries=p.get("noisy_queries"))
        dp = dp or {}
        block["formal_guarantee"] = (
            "none (joint mode: the encoder was fine-tuned on the clean private inputs)" if joint else
            "(epsilon, delta)-DP per example" if dp.get("valid_dp_guarantee") else
            "none (one noise vector per batch: not DP)" if dp.get("noise_reading") == "per-batch" else
            "none (not a valid DP calibration)")
        return block

    def card_rows(self, privacy: dict) -> list[str]:
        p, dp = privacy, privacy.get("dp")
        rows = super().card_rows(p)
        if dp:
            rows += [f"| DP mechanism | {dp.get('mechanism')} (clip {dp.get('clip'):g}, {dp.get('clip_norm')}) |",
                     f"| DP target epsilon, delta | {dp.get('target_epsilon')}, {dp.get('delta'):g} |",
                     f"| DP calibration | {dp.get('calibration')} |",
                     f"| accounted epsilon | {dp.get('accounted_epsilon'):.4g} over {dp.get('participations')} "
                     "encodings per example |" if dp.get("accounted_epsilon") is not None else
                     "| accounted epsilon | none: one noise vector per batch (Algorithm 1 as printed) is not DP |",
                     f"| noise on queries | {'yes' if p.get('noisy_queries') else 'no (clean queries)'} |"]
        return rows

    def query_dp(self, privacy: dict) -> dict | None:
        return privacy["dp"]

    def query_hider(self, privacy: dict, *, m: float, dim: int, pool: Any, rng: Any) -> Any:
        from ..mechanisms.dp import DPTextHide, make_mechanism

        dp = privacy["dp"]
        mech = make_mechanism(dp["mechanism"], clip=float(dp["clip"]), noise=float(dp["noise"]), dim=int(dp["dim"]),
                              clip_norm=dp["clip_norm"], max_weight=float(dp["max_weight"]))
        return DPTextHide(m, self.k, dim=dim, rng=rng, mechanism=mech, pool=pool,
                          noisy_queries=bool(privacy["noisy_queries"]))

    def dp_event(self, *, calibration: dict | None = None, **context: Any) -> DpEvent | None:
        """The release's DP event from its calibration's JSON: ``participations`` compositions of the noise
        mechanism; None without a calibration and for the per-batch reading (no finite epsilon)."""
        from ..accounting import mechanism_event

        if not calibration or self.noise == "per-batch" or calibration.get("noise_reading") == "per-batch":
            return None
        return mechanism_event(calibration.get("mechanism"), calibration.get("noise_multiplier"), None,
                               calibration.get("participations"))

    def guarantee(self, *, calibration: dict | None = None, joint: bool = False, **context: Any) -> Guarantee:
        """The guarantee of a release calibrated as ``calibration`` (a calibration's JSON); none in joint mode."""
        cal = calibration or {}
        if self.noise == "per-batch" or cal.get("noise_reading") == "per-batch":
            return Guarantee("none", f"none: {PER_BATCH_WARNING.removeprefix('WARNING: ')} (an attacker holding two "
                                     "encodings of one batch tells neighbouring batches apart with certainty)")
        eps, delta = cal.get("accounted_epsilon"), cal.get("delta", self.delta)
        if joint:
            return Guarantee("none", f"none: {JOINT_DP_CAVEAT} (with a fixed encoder the same noise would give "
                                     f"({eps:.4g}, {delta:g})-DP)" if eps is not None else f"none: {JOINT_DP_CAVEAT}")
        if eps is None:
            return Guarantee("dp", f"({self.epsilon:g}, {self.delta:g})-DP per example, whole release (target)",
                             epsilon=self.epsilon, delta=self.delta)
        if cal.get("valid_dp_guarantee"):
            text = (f"({eps:.4g}, {delta:g})-DP per training example over the whole training release (every epoch's "
                    "encodings, accounted with dp-accounting); it covers the encodings, not the mixed labels"
                    + ("; queries are not protected (clean queries)" if self.clean_queries else ""))
            return Guarantee("dp", text, epsilon=eps, delta=delta)
        return Guarantee("dp", f"NOT a valid DP guarantee for the target epsilon {cal.get('target_epsilon')} (the "
                               f"paper's per-encoding calibration); the training release is only ({eps:.4g}, "
                               f"{delta:g})-DP per example", epsilon=eps, delta=delta)


def _round(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v
