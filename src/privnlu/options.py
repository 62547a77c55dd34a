"""The settings every command and every settings dataclass shares, each defined once (:data:`OPTIONS`): its flag,
type, range, default and help.

The command line adds these to its parsers by name (:mod:`privnlu.cli.options`); the library's settings dataclasses
declare their fields with them (:func:`privnlu.params.param`), so a default or a range is written in one place. The
privacy schemes declare their own parameters (:mod:`privnlu.schemes`).
"""

from __future__ import annotations

from .choices import DP_CALIBRATIONS, DP_MECHANISMS, EVAL_MASKS, MODES, NOISE_READINGS, PACKAGED_MODEL_NAMES, POOLINGS
from .params import (CLIP, DELTA, EPSILON, ETA, POOL, POS_INT, RATE, SEED, Option, Range, float_list, int_list, task_name,
                     m_value, name_list)

F, I = float, int
ETAS = Range(lo=0, lo_open=True, hi=1e12, items=True)
_ALL = [
    # data
    Option("task", "--task", "task name (see `privnlu tasks`), e.g. sst2, cola, tweets", task_name, group="data"),
    Option("data_dir", "--data-dir", "GLUE data folder (default: $PRIVNLU_DATA, else ../shared/data/glue)", group="data"),
    Option("train_limit", "--train-limit", "use only the first N training examples", I, range=POS_INT, group="data"),
    Option("dev_limit", "--dev-limit", "use only the first N dev examples", I, range=POS_INT, group="data"),
    Option("train_file", "--train-file", "your own train file (.csv, .tsv or .jsonl); --task then names it", group="data"),
    Option("dev_file", "--dev-file", "your own dev file, same columns as --train-file", group="data"),
    Option("text_col", "--text-col", "text column of --train-file", default="text", group="data"),
    Option("text_pair_col", "--text-pair-col", "second text column, for sentence-pair tasks", group="data"),
    Option("label_col", "--label-col", "label column", default="label", group="data"),
    Option("regression", "--regression", "labels are numbers (metric: Pearson/Spearman)", kind="flag", group="data"),
    Option("split", "--split", "which split", default="train"),
    Option("public", "--public", "public corpus of TextHide-inter: wiki (packaged), tweets, bbc, qnli-dev, mixed, or "
           "a text file with one sentence per line", default="wiki", group="scheme"),
    Option("public_size", "--public-size", "public sentences to use", I, default=20000, range=POS_INT, group="scheme"),
    # encoder
    Option("model", "--model", "a packaged encoder by name (" + ", ".join(PACKAGED_MODEL_NAMES) + "; the second "
           "needs its five packages: docs/guide/data-and-encoders.md) or a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)",
           group="encoder"),
    Option("pooling", "--pooling", "sentence representation: auto (the model's own: mean for the packaged MiniLM, "
           "else cls), cls, pooler or mean", default="auto", choices=POOLINGS, group="encoder"),
    Option("max_length", "--max-length", "max tokens per text (incl. [CLS]/[SEP])", I, default=128,
           range=Range(lo=3, integer=True), group="encoder"),
    Option("encode_batch_size", "--encode-batch-size", "texts per encoder forward pass", I, default=64, range=POS_INT,
           group="encoder"),
    Option("bf16", "--bf16", "bfloat16 autocast of the encoder: auto (on where the CPU (AVX-512 BF16, AMX) or GPU runs "
           "bf16 natively), on, or off; --bf16 alone means on", default="auto", choices=("auto", "on", "off"),
           nargs="?", const="on", group="encoder"),
    Option("device", "--device", "cpu or cuda", default="cpu", choices=("cpu", "cuda"), group="encoder"),
    Option("cache_dir", "--cache-dir", "feature cache folder (default: $PRIVNLU_CACHE or ~/.cache/privnlu)",
           writes="dir", group="encoder"),
    Option("refresh_cache", "--refresh-cache", "recompute cached features", kind="flag", group="encoder"),
    # scheme (the schemes' own parameters come from the registry)
    Option("scheme", "--scheme", "privacy scheme (see privnlu.schemes)", default="none", group="scheme"),
    Option("schemes", "--schemes", "comma-separated privacy schemes", name_list, group="scheme"),
    # training
    Option("mode", "--mode", "frozen encoder + MLP head, or joint fine-tuning of encoder and head", default="frozen",
           choices=MODES, group="training"),
    Option("epochs", "--epochs", "training epochs", I, default=20, range=POS_INT, group="training"),
    Option("lr", "--lr", "head learning rate", F, default=1e-3, range=RATE, group="training"),
    Option("encoder_lr", "--encoder-lr", "encoder learning rate in joint mode", F, default=2e-5, range=RATE,
           group="training"),
    Option("batch_size", "--batch-size", "examples per batch", I, default=64, range=POS_INT, group="training"),
    Option("weight_decay", "--weight-decay", "AdamW weight decay of the head", F, default=0.01,
           range=Range(lo=0, hi=1e3), group="training"),
    Option("hidden", "--hidden", "head hidden sizes, e.g. 768,768,768 (default: d,d,d)", int_list,
           range=Range(lo=1, integer=True, items=True), group="training"),
    Option("eval_mask", "--eval-mask", "dev representations are never mixed; pool masks each with a pool mask as the "
           "data owner would (the reference code's behaviour), none evaluates on raw representations", default="pool",
           choices=EVAL_MASKS, group="training"),
    Option("abs_input", "--abs-input", "train the head on |x| (mask-invariant: it needs no key, which shows how little "
           "the masks hide)", kind="flag", group="training"),
    Option("dropout", "--dropout", "dropout of the head", F, default=0.1, range=Range(lo=0, hi=1, hi_open=True)),
    Option("seed", "--seed", "EXPERIMENTS ONLY: makes every secret reproducible", I, range=SEED),
    Option("quiet", "--quiet", "no progress bars", kind="flag"),
    Option("resume", "--resume", "continue an interrupted run from its last checkpoint", kind="flag"),
    Option("force", "--force", "replace existing outputs", kind="flag"),
    # releases
    Option("encodings_per_example", "--encodings-per-example", "encode every example this many times, fresh keys "
           "each time", I, default=1, range=POS_INT),
    Option("key_out", "--key-out", "key file (.pt, mode 0600): keep it private", required=True, writes="key"),
    Option("ledger", "--ledger", "privacy ledger kept beside the key (JSON, 0600): the release is checked against "
           "the owner's budget before any work (refused if it would exceed it) and recorded once written (see "
           "privnlu dp account --ledger)", metavar="FILE", writes="ledger"),
    Option("payload", "--payload", "attack this shared encoding file (written by privnlu encode) instead of encoding "
           "a task; the attack reads only the shared file, never a key file, and outputs its answers (nearest "
           "sentences and cosines); --key scores them", metavar="FILE"),
    Option("key", "--key", "with --payload: the owner's key file of that release (privnlu encode --key-out), read "
           "only after the attack has answered, with the originals it points to, to score the answers: the private "
           "sentences recovered, with their 95 % interval, chance line and advantage over chance", metavar="KEY.pt"),
    # DP accounting and audits
    # the privacy schemes' parameters (privnlu.schemes declares each scheme's defaults with these)
    Option("m", "--m", "mask pool size: 0 (no mask), N, or inf (a fresh mask per example)", m_value, range=POOL,
           group="scheme"),
    Option("k", "--k", "representations mixed per encoding (1 = no mixing)", I, range=POS_INT, group="scheme"),
    Option("inter", "--inter", "mix floor(k/2) components of each encoding from a public corpus, as TextHide-inter "
           "does", kind="flag", group="scheme"),
    Option("mechanism", "--dp-mechanism", "DP noise distribution (L2 clipping for gaussian, L1 for laplace)",
           choices=DP_MECHANISMS, group="scheme"),
    Option("epsilon", "--dp-epsilon", "target epsilon per example for the whole release, every encoding of every "
           "pass included", F, range=EPSILON, group="scheme"),
    Option("delta", "--dp-delta", "target delta", F, range=DELTA, group="scheme"),
    Option("clip", "--dp-clip", "clipping bound C: L2 for gaussian, L1 for laplace", F, range=CLIP, group="scheme"),
    Option("calibration", "--dp-calibration", "correct, or paper: the paper's per-encoding calibration, NOT a valid DP "
           "guarantee", choices=DP_CALIBRATIONS, group="scheme"),
    Option("noise", "--dp-noise", "per-encoding: fresh noise for every encoding (the DP guarantee); per-batch: one "
           "noise vector per batch, added to every encoding, as Algorithm 1 is printed: NOT DP (the difference of two "
           "encodings of a batch is noise-free)", choices=NOISE_READINGS, group="scheme"),
    Option("clean_queries", "--dp-clean-queries", "queries are clipped and masked but not noised (the guarantee then "
           "covers the training release only)", kind="flag", group="scheme"),
    Option("eta", "--eta", "privacy parameter eta > 0 of d_chi (smaller = more noise; see privnlu dchi calibrate)", F,
           range=ETA, group="scheme"),
    Option("dp_epsilons", "--dp-epsilons", "comma-separated epsilons per example of the whole release", float_list,
           range=Range(lo=0, lo_open=True, hi=EPSILON.hi, items=True)),
    Option("dim", "--dim", "representation width d", I, default=384, range=POS_INT),
    Option("budget_epsilon", "--budget-epsilon", "set the owner's budget in the ledger: epsilon per example over all "
           "DP releases (at --budget-delta); later releases above it are refused", F, range=EPSILON),
    Option("budget_delta", "--budget-delta", "delta of the budget (default: 1e-5)", F, range=DELTA),
    Option("budget_eta", "--budget-eta", "set the owner's budget for d_chi releases: total eta per example", F,
           range=ETA),
    Option("draws", "--draws", "draws per hypothesis", I, range=POS_INT),
    Option("etas", "--etas", "comma-separated eta values", float_list, range=ETAS),
    Option("pairs", "--pairs", "token pairs audited", I, default=3, range=POS_INT),
    Option("target_loss", "--target-loss", "pick pairs whose claim eta * d(x, x') is closest to this (within the "
           "audit's power)", F, default=2.0, range=Range(lo=0, lo_open=True, hi=100)),
    # outputs and reports
    Option("out", "--out", "output file", writes="file"),
    Option("title", "--title", "page title", default="privnlu report"),
    Option("markdown", "--markdown", "print the tables as Markdown to stdout instead (for docs)", kind="flag"),
]
OPTIONS: dict[str, Option] = {o.dest: o for o in _ALL}
