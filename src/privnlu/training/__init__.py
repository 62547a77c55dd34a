"""Training on privatized data: the engine (:mod:`.engine`), the shared training loop (:mod:`.trainer`), private
fine-tuning and pretraining under d_chi. The data owner's release is :mod:`privnlu.owner`; a trained model's folder
(export, card, prediction) is :mod:`privnlu.model_folder`.

The package's names are imported on first use: its settings (:mod:`.settings`) stay importable without torch, which
the command line reads to build its options.
"""

from __future__ import annotations

import importlib

#: name -> the submodule that defines it
_NAMES = {"TrainConfig": "trainer", "TrainState": "trainer", "fit": "trainer", "soft_cross_entropy": "losses",
          "targets_from_labels": "losses", "task_loss": "losses"}


def __getattr__(name: str):
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_NAMES)
