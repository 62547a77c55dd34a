"""The settings of the training runs whose commands take many options, torch-free, each field declared with its
option (:func:`privnlu.params.param`): the command line builds its parsers from these declarations, the library
validates with them.

* :class:`FinetuneConfig` and :class:`GridSettings`: privacy-constrained fine-tuning (``privnlu dchi finetune``,
  :mod:`.private_finetune`);
* :class:`PretrainConfig`: privacy-adaptive MLM pretraining (``privnlu dchi pretrain``, :mod:`.mlm`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass

from ..choices import BF16_MODES, FINETUNE_ENCODERS, FINETUNE_MODES, MLM_INPUT_MECHANISMS, MLM_OBJECTIVES
from ..errors import PrivnluError, require_at_least_one, require_choice, require_learning_rate
from ..options import OPTIONS
from ..params import ETA, NONNEG_INT, POS_INT, RATE, Option, Range, param


@dataclass(frozen=True)
class FinetuneConfig:
    """One fine-tuning run. Learning rates: ``lr`` transformer body, ``lstm_lr`` BiLSTM body, ``head_lr`` heads."""

    mode: str
    encoder: str = "transformer"
    eta: float | None = None
    epochs: int = param(OPTIONS["epochs"].but(default=3))
    batch_size: int = param(OPTIONS["batch_size"].but(default=32))
    lr: float = param(OPTIONS["lr"].but(help="transformer learning rate (default: the paper's, section 6.1: 2e-5 on "
                                           "sst2, 4e-5 on qqp and on mrpc, which stands in for QQP)"), default=5e-5)
    lstm_lr: float = param(Option("lstm_lr", "--lstm-lr", "BiLSTM learning rate (the paper's)", float, default=1e-3,
                                  range=RATE))
    head_lr: float = param(Option("head_lr", "--head-lr", "learning rate of the task head", float, default=1e-3,
                                  range=RATE))
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    lstm_hidden: int = param(Option("lstm_hidden", "--lstm-hidden", "BiLSTM hidden size", int, default=256,
                                    range=POS_INT))
    dropout: float = 0.1
    seed: int | None = param(OPTIONS["seed"].but(help="EXPERIMENTS ONLY: makes the noise, data order, "
                                                      "initialisation and dropout reproducible"))
    bf16: str = param(OPTIONS["bf16"].but(group=""))

    def __post_init__(self) -> None:
        require_choice("mode", self.mode, FINETUNE_MODES)
        require_choice("--bf16", self.bf16, BF16_MODES)
        require_choice("encoder", self.encoder, FINETUNE_ENCODERS)
        from ..mechanisms.dchi_modes import finetune_mode  # not at import: the command line reads these options

        mode = finetune_mode(self.mode)
        if not mode.private:
            if self.eta is not None:
                raise PrivnluError(f"mode '{mode}' takes no eta")
        elif self.eta is None:
            raise PrivnluError(f"mode '{self.mode}' needs an eta")
        else:
            ETA.require("eta", self.eta)
        if mode.on_representation and self.encoder == "bilstm":
            raise PrivnluError("mode 'sequence' needs a pretrained user-side encoder; use --encoder transformer")
        require_at_least_one(self, "epochs", "batch_size", "lstm_hidden")
        require_learning_rate(self.lr, self.lstm_lr, self.head_lr)

    @property
    def body_lr(self) -> float:
        return self.lr if self.encoder == "transformer" else self.lstm_lr


@dataclass(frozen=True)
class GridSettings:
    """What a ``dchi finetune`` grid shares: the task and its data, and the runs' budget."""

    task: str = param(OPTIONS["task"].but(required=True, group=""), default=MISSING)
    model: str | None = param(OPTIONS["model"].but(help="a local Hugging Face model folder, e.g. a `dchi pretrain` "
                                                        "OUT/encoder folder (default: packaged MiniLM)", group=""))
    data_dir: str | None = param(OPTIONS["data_dir"].but(group=""))
    train_limit: int | None = param(OPTIONS["train_limit"].but(group=""))
    dev_limit: int | None = param(OPTIONS["dev_limit"].but(group=""))
    max_length: int = param(OPTIONS["max_length"].but(group=""))
    tag: str = param(Option("tag", "--tag", "label added to the results file names and records (e.g. the "
                            "checkpoint)", default=""))
    device: str = param(OPTIONS["device"].but(group=""))


@dataclass(frozen=True)
class PretrainConfig:
    """A privacy-adaptive pretraining run (CPU-sized defaults; scale ``steps`` and ``batch_size`` on a GPU)."""

    objective: str = param(Option("objective", "--objective", "MLM objective", choices=MLM_OBJECTIVES, required=True),
                           default="denoising")
    eta: float = param(OPTIONS["eta"].but(required=True, help="the fine-tuning eta", group=""), default=65.6)
    mechanism: str = "text"  # M_txt or M_rep (the schemes dchi-text, dchi-token)
    steps: int = param(Option("steps", "--steps", "privatized adaptation steps", int, default=200, range=POS_INT))
    warmup_steps: int = param(Option("warmup_steps", "--warmup-steps", "clean head warm-up steps", int, default=100,
                                     range=NONNEG_INT))
    batch_size: int = param(OPTIONS["batch_size"].but(default=16))
    max_length: int = param(OPTIONS["max_length"].but(default=64, group=""))
    lr: float = param(OPTIONS["lr"].but(default=5e-5, help="encoder learning rate"))
    head_lr: float = param(Option("head_lr", "--head-lr", "learning rate of the MLM head", float, default=1e-3,
                                  range=RATE))
    mask_prob: float = param(Option("mask_prob", "--mask-prob", "fraction of tokens masked for MLM", float,
                                    default=0.15, range=Range(lo=0, hi=1, lo_open=True)))
    draws: int = param(OPTIONS["draws"].but(default=10, help="perturbations per masked token (probability MLM)"))
    checkpoint_every: int = param(Option("checkpoint_every", "--checkpoint-every", "checkpoint every N steps", int,
                                         default=50, range=POS_INT))
    eval_size: int = param(Option("eval_size", "--eval-size", "held-out corpus texts for masked accuracy", int,
                                  default=256, range=POS_INT))
    corpus: str = param(Option("corpus", "--corpus", "'wiki' (packaged) or a text file, one text per line",
                               default="wiki"))
    corpus_limit: int | None = param(Option("corpus_limit", "--corpus-limit", "use the first N corpus texts", int,
                                            range=POS_INT))
    seed: int | None = param(OPTIONS["seed"].but(help="EXPERIMENTS ONLY: makes noise, masks and order reproducible"))

    def __post_init__(self) -> None:
        require_choice("objective", self.objective, MLM_OBJECTIVES)
        require_choice("input mechanism", self.mechanism, MLM_INPUT_MECHANISMS)
        ETA.require("eta", self.eta)
        require_at_least_one(self, "batch_size", "max_length", "draws", "checkpoint_every", "eval_size")
        if self.steps < 0 or self.warmup_steps < 0:
            raise PrivnluError("step counts must be >= 0")
        if self.max_length < 3:
            raise PrivnluError("--max-length must be at least 3")
        if not 0 < self.mask_prob < 1:
            raise PrivnluError(f"the masking probability must be in (0, 1), not {self.mask_prob}")
        require_learning_rate(self.lr, self.head_lr)
