"""The keyless ``|x~|`` head: a use of a TextHide release that needs no key.

The sign masks of TextHide leave each coordinate's magnitude, so a classifier trained on the absolute values of the
released encodings with their mixed labels (``TrainConfig(abs_input=True)``) also reads plain ``|h(x)|`` of any text:
whoever holds the release can classify new text without the owner's key. The audit trains it with the shared
training pipeline (:func:`privnlu.training.engine.train_run`) and reports its accuracy; this class states what it
is granted.
"""

from __future__ import annotations

from ..threat import Attack, Grant


class KeylessAbsHead(Attack):
    """A head on ``|encodings|`` and the mixed labels, applied to ``|h(x)|``: no key, no pool mask."""

    name = "keyless-abs-head"
    requires = frozenset({Grant.ENCODINGS, Grant.MIXED_LABELS, Grant.ENCODER})
