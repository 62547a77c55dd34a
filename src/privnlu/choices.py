"""The torch-free vocabulary every layer shares: the values the library accepts where a command line offers a choice.

The library validates against these tuples and the command line offers them, so ``privnlu X --help`` can state
every choice without importing torch. Scheme names are not here: they are the registry's (:mod:`privnlu.schemes`).
"""

from __future__ import annotations

#: DP instance encoding noise, and its calibrations (mechanisms.dp)
DP_MECHANISMS = ("gaussian", "laplace")
DP_CALIBRATIONS = ("correct", "paper")
#: DP instance encoding's two readings of the noise draw (fresh per encoding: DP; one per batch: Algorithm 1 as
#: printed, not DP)
NOISE_READINGS = ("per-encoding", "per-batch")
#: d_chi's mechanisms M_rep, M_txt, M_seq (mechanisms.dchi_text); the schemes dchi-token, dchi-text, dchi-sequence
DCHI_MECHANISMS = ("rep", "text", "sequence")
#: how dev representations are encoded in evaluation (training.trainer)
EVAL_MASKS = ("pool", "none")
#: training modes: a frozen encoder's cached features and a head, or encoder and head fine-tuned jointly
MODES = ("frozen", "joint")
#: sentence representations (models.encoder): the model's own, [CLS], BERT's pooler output, mean of tokens
POOLINGS = ("auto", "cls", "pooler", "mean")
#: privacy-constrained fine-tuning modes of Qu et al.'s Table 4 and encoders (training.private_finetune)
FINETUNE_MODES = ("null", "sequence", "token", "text")
FINETUNE_ENCODERS = ("transformer", "bilstm")
#: privacy-adaptive MLM objectives, and the d_chi mechanisms of their privatized input (training.mlm)
MLM_OBJECTIVES = ("vanilla", "probability", "denoising")
MLM_INPUT_MECHANISMS = ("text", "rep")
#: bfloat16 autocast of the encoder: where the device runs it natively, always, never (models.precision)
BF16_MODES = ("auto", "on", "off")
#: the budgets of the huang2020 recipes (experiments.huang2020.SCALES has one entry per name)
SCALE_NAMES = ("quick", "cpu", "paper")
#: ``--model`` names of the packaged encoders (models.encoder.DEFAULT_MODEL_NAME, models.packaged.PACKAGED_MODELS)
PACKAGED_MODEL_NAMES = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
