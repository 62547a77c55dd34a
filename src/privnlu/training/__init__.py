"""Training on privatized data: losses and the shared training loop."""

from .losses import soft_cross_entropy, targets_from_labels, task_loss
from .trainer import TrainConfig, TrainState, fit

__all__ = ["TrainConfig", "TrainState", "fit", "soft_cross_entropy", "targets_from_labels", "task_loss"]
