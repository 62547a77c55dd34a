"""``dp-sgd``: DP-SGD (Abadi et al. 2016): the model is trained privately, nothing of the data is released.

Every step samples a Poisson batch, clips each example's gradient to L2 norm ``clip`` and adds Gaussian noise to
the sum; the privacy accountant (PRV or RDP, Opacus) composes every step of the run. The guarantee holds for the
trained model (weights or query access) in frozen mode (a head on a fixed encoder) and in joint mode (encoder and
head fine-tuned together with DP-SGD). The training is :mod:`privnlu.training.dp_sgd`; Xie & Hong 2022 compare DP
instance encoding against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PrivnluError, require, require_choice
from ..options import OPTIONS
from ..params import DELTA, Option, check_privacy_params, fmt_number, param
from .base import Guarantee, ThreatModel
from .kinds import ModelScheme
from .dp_sgd_claim import verify_dp_sgd
from .registry import register

if TYPE_CHECKING:
    from dp_accounting import DpEvent

#: Opacus's privacy accountants privnlu offers, and their names in words
ACCOUNTANTS = {"prv": "PRV (Gopi et al. 2021)", "rdp": "RDP (Mironov 2017)"}

ACCOUNTANT = Option("accountant", "--dp-accountant", "privacy accountant of DP-SGD's steps: prv (privacy random "
                    "variables, the tighter) or rdp (Renyi DP)", choices=tuple(ACCOUNTANTS), group="scheme")


@register
@dataclass(frozen=True)
class DPSGD(ModelScheme):
    """Per-example gradient clipping and Gaussian noise in training; (epsilon, delta)-DP per example for the model."""

    name = "dp-sgd"
    title = "DP-SGD"
    paper = "Abadi et al. 2016"
    level = "none"  # it privatizes training, not the data
    formal = "dp"
    federated = False
    threat = ThreatModel(
        releases="only the trained model (weights or query access); no representation or text of the training data",
        adversary="anyone who can query the model, with data from the same distribution",
        query="the clean query through the released model",
        attacks=("membership",),
        audit_attack="membership inference (LiRA, Carlini et al. 2022)",
    )
    known_leakage = ("DP-SGD bounds what any attack on the released model (membership inference, reconstruction) "
                     "can learn about one training example by its (epsilon, delta); the pretrained encoder's own "
                     "training data are not covered.")

    epsilon: float = param(OPTIONS["epsilon"].but(default=8.0, help="target epsilon per example for the whole "
                                                                    "training run (every step)"))
    delta: float | None = param(OPTIONS["delta"].but(help="target delta (default: 1/(10 n), n training examples; at "
                                                          "most 1/n)"))
    clip: float = param(OPTIONS["clip"].but(default=1.0, help="clipping bound C of each example's gradient (L2)"))
    accountant: str = param(ACCOUNTANT.but(default="prv"))

    def validate(self) -> None:
        check_privacy_params(self.epsilon, 1e-5 if self.delta is None else self.delta)
        if self.delta is not None:
            DELTA.require("delta", self.delta)
        require(math.isfinite(self.clip) and self.clip > 0, f"the clipping bound C must be > 0, not {self.clip}")
        require_choice("accountant", self.accountant, tuple(ACCOUNTANTS))

    @property
    def label(self) -> str:
        """``dp-sgd-eps8-clip1-prv`` (delta, like DP instance encoding's, is in the record, not the label)."""
        return f"{self.name}-eps{fmt_number(float(self.epsilon))}-clip{fmt_number(float(self.clip))}-{self.accountant}"

    def guarantee(self, *, calibration: dict | None = None, joint: bool = False, **context: Any) -> Guarantee:
        """The guarantee of a model trained as ``calibration`` says (a :class:`~privnlu.training.dp_sgd.DPSGDResult`'s
        JSON), or the target before training; joint mode keeps it (the encoder is trained with DP-SGD too). A
        calibration's epsilon is verified against its own mechanism first (:mod:`.dp_sgd_claim`)."""
        cal = calibration or {}
        which = "encoder and head" if joint else "head"
        if not cal:
            delta = "1/(10 n)" if self.delta is None else f"{self.delta:g}"
            return Guarantee("dp", f"({self.epsilon:g}, {delta})-DP per training example for the released model "
                                   f"(target; DP-SGD on the {which}, {ACCOUNTANTS[self.accountant]} accountant)",
                             epsilon=self.epsilon, delta=self.delta)
        eps = verify_dp_sgd(cal, where="the model's DP-SGD record")  # recomputed, never taken on trust
        accountant = ACCOUNTANTS[cal["accountant"]]
        delta = float(cal["delta"])
        how = ", ".join(f"{k} {v}" for k, v in (
            ("noise multiplier", _num(cal.get("noise_multiplier"))), ("sampling rate", _num(cal.get("sample_rate"))),
            ("steps", cal.get("steps")), ("clip", _num(cal.get("clip")))) if v is not None)
        return Guarantee("dp", f"({eps:.4g}, {delta:g})-DP per training example for the released model (DP-SGD on the "
                               f"{which} with Opacus, {accountant} accountant" + (f": {how}" if how else "") + "); it "
                               "covers each example's text and label, not the pretrained encoder's own data",
                         epsilon=float(eps), delta=delta)

    def dp_event(self, *, calibration: dict | None = None, **context: Any) -> DpEvent | None:
        """The model's DP event from its DP-SGD record (or the planned noise): ``steps`` Poisson-sampled Gaussian
        steps; None before the noise is known."""
        from ..accounting import gaussian_event

        if not calibration:
            return None
        require(calibration.get("sample_rate") is not None, "the DP-SGD record has no sampling rate")
        return gaussian_event(calibration.get("noise_multiplier"), calibration["sample_rate"], calibration.get("steps"))

    def check_received(self, record: dict | None, *, where: str) -> None:
        """A DP-SGD model must carry its DP-SGD record, and its epsilon is recomputed from its own noise multiplier,
        sampling rate, steps and delta (:func:`~.dp_sgd_claim.verify_dp_sgd`)."""
        if not record:
            raise PrivnluError(f"{where}: a DP-SGD model without its DP-SGD record (privacy.dp): its guarantee cannot "
                               "be checked")
        verify_dp_sgd(record, where=where)

    def private_training(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "clip": self.clip, "accountant": self.accountant}

    def record_dp(self) -> dict[str, Any]:
        return self.params()

    def ledger_entry(self, *, calibration: Any = None, model: str = "the encoder") -> dict[str, Any]:
        """The trained model, from its :class:`~privnlu.training.dp_sgd.DPSGDResult` JSON (or the planned noise)."""
        c = calibration
        return {"guarantee": "dp", "mechanism": self.name, "epsilon": c["epsilon"], "delta": c["delta"],
                "events": self.required_dp_event(c),
                "meaning": f"({c['epsilon']:.4g}, {c['delta']:g})-DP per example for the trained model (DP-SGD, "
                           f"{c['steps']} Poisson-sampled steps at q = {c['sample_rate']:.4g}, noise multiplier "
                           f"{c['noise_multiplier']:.4g})"}

    # -- the audit grid: one point per --dp-sgd-epsilons, trained at DP-SGD's own batch size and rate

    @classmethod
    def audit_points(cls, settings: Any) -> list[dict[str, Any]]:
        return [{"epsilon": e} for e in settings.dp_sgd_epsilons]

    @classmethod
    def audit_point_name(cls, point: dict[str, Any]) -> str:
        return f"{cls.name}-eps{point['epsilon']:g}"

    @classmethod
    def audit_scheme(cls, point: dict[str, Any], settings: Any, *, eta: float | None = None) -> "DPSGD":
        return cls(epsilon=point["epsilon"])

    def audit_train(self, train: Any, settings: Any) -> Any:
        from dataclasses import replace

        return replace(train, batch_size=settings.dp_sgd_batch_size, lr=settings.dp_sgd_lr)

    # -- the model card

    def card_tags(self) -> list[str]:
        return ["differential-privacy"]

    def card_block(self, privacy: dict, *, joint: bool) -> dict[str, Any]:
        dp = privacy.get("dp")
        if not dp:
            return {"formal_guarantee": "none (no accounted training)"}
        return {"dp_method": "dp-sgd", "dp_target_epsilon": dp.get("target_epsilon"), "dp_delta": dp.get("delta"),
                "dp_clip": dp.get("clip"), "dp_noise_multiplier": _round(dp.get("noise_multiplier")),
                "dp_sample_rate": _round(dp.get("sample_rate")), "dp_steps": dp.get("steps"),
                "dp_accountant": dp.get("accountant"), "dp_accounted_epsilon": _round(dp.get("epsilon")),
                "formal_guarantee": "(epsilon, delta)-DP per example"}

    def card_rows(self, privacy: dict) -> list[str]:
        return dp_sgd_rows(privacy["dp"]) if privacy.get("dp") else []


def dp_sgd_rows(dp: dict) -> list[str]:
    """The Privacy table's rows of a model trained with DP-SGD (a :class:`~privnlu.training.dp_sgd.DPSGDResult`'s
    JSON), its epsilon verified against its own mechanism first (:func:`~.dp_sgd_claim.verify_dp_sgd`)."""
    verify_dp_sgd(dp, where="the model's DP-SGD record")
    target = dp.get("target_epsilon")
    return [f"| training | DP-SGD (Opacus, {dp.get('grad_sample_mode')} per-example gradients) |",
            f"| per-example clipping (L2) | {dp['clip']:g} |",
            f"| noise multiplier | {dp['noise_multiplier']:.4g}"
            + (f" (calibrated for epsilon {target:g})" if target is not None else " (given)") + " |",
            f"| Poisson sampling rate, steps | {dp['sample_rate']:.4g}, {dp['steps']} |",
            f"| accounted epsilon, delta | {dp['epsilon']:.4g}, {dp['delta']:g} ({dp['accountant']} accountant) |"]


def _round(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def _num(v: Any) -> str | None:
    return None if v is None else f"{v:.4g}"
