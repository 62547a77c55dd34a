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
from typing import Any

from ..errors import PrivnluError, require, require_choice
from ..options import OPTIONS
from ..params import DELTA, Option, check_privacy_params, fmt_number, param
from .base import Guarantee, Scheme, ThreatModel
from .dp_sgd_claim import verify_dp_sgd
from .registry import register

#: Opacus's privacy accountants privnlu offers, and their names in words
ACCOUNTANTS = {"prv": "PRV (Gopi et al. 2021)", "rdp": "RDP (Mironov 2017)"}

ACCOUNTANT = Option("accountant", "--dp-accountant", "privacy accountant of DP-SGD's steps: prv (privacy random "
                    "variables, the tighter) or rdp (Renyi DP)", choices=tuple(ACCOUNTANTS), group="scheme")


@register
@dataclass(frozen=True)
class DPSGD(Scheme):
    """Per-example gradient clipping and Gaussian noise in training; (epsilon, delta)-DP per example for the model."""

    name = "dp-sgd"
    title = "DP-SGD"
    paper = "Abadi et al. 2016"
    level = "none"  # it privatizes training, not the data
    release = "model"  # nothing of the data leaves the owner: only the trained model
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

    def check_received(self, record: dict | None, *, where: str) -> None:
        """A DP-SGD model must carry its DP-SGD record, and its epsilon is recomputed from its own noise multiplier,
        sampling rate, steps and delta (:func:`~.dp_sgd_claim.verify_dp_sgd`)."""
        if not record:
            raise PrivnluError(f"{where}: a DP-SGD model without its DP-SGD record (privacy.dp): its guarantee cannot "
                               "be checked")
        verify_dp_sgd(record, where=where)

    def hider(self, *, dim: int, rng: Any, epochs: int = 1, public: Any = None, pool: Any = None) -> None:
        """No encoding: training sees the clean representations (the privacy is in the optimizer)."""
        return None

    def release_hider(self, **kwargs: Any) -> Any:
        raise PrivnluError(self._no_release())

    def calibrate(self, **kwargs: Any) -> Any:
        raise PrivnluError(self._no_release())

    def _no_release(self) -> str:
        return (f"{self.name} releases no data, only a model trained privately: use privnlu train --scheme "
                f"{self.name}")


def _num(v: Any) -> str | None:
    return None if v is None else f"{v:.4g}"
