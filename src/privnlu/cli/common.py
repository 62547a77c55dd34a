"""Arguments and helpers shared by several subcommands.

Building a parser must not import torch (``privnlu X --help`` answers in well under a second): this module, and
every command module at import time, imports only :mod:`privnlu.errors`, :mod:`privnlu.choices` and the standard
library; the pipeline, models and mechanisms are imported inside the functions that run a command.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..choices import EVAL_MASKS, parse_m
from ..errors import PrivnluError

if TYPE_CHECKING:
    from ..training.engine import RunSpec
    from ..training import TrainConfig


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be >= 1")
    return v


def int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers") from None


def m_list(text: str) -> list[float]:
    try:
        return [parse_m(x) for x in text.split(",") if x.strip()]
    except PrivnluError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def m_value(text: str) -> float:
    try:
        return parse_m(text)
    except PrivnluError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_data_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--task", required=True, help="task name (see `privnlu tasks`), e.g. sst2, cola, tweets")
    g.add_argument("--data-dir", help="GLUE data folder (default: $PRIVNLU_DATA, else ../shared/data/glue)")
    g.add_argument("--train-limit", type=positive_int, help="use only the first N training examples")
    g.add_argument("--dev-limit", type=positive_int, help="use only the first N dev examples")
    g.add_argument("--train-file", help="your own train file (.csv, .tsv or .jsonl); --task then names it")
    g.add_argument("--dev-file", help="your own dev file, same columns as --train-file")
    g.add_argument("--text-col", default="text", help="text column of --train-file (default: text)")
    g.add_argument("--text-pair-col", help="second text column, for sentence-pair tasks")
    g.add_argument("--label-col", default="label", help="label column (default: label)")
    g.add_argument("--regression", action="store_true", help="labels are numbers (metric: Pearson/Spearman)")


def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("encoder")
    g.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    g.add_argument("--pooling", default="auto", choices=["auto", "cls", "pooler", "mean"],
                   help="sentence representation (default: auto, the model's own: mean for the packaged MiniLM, "
                        "else cls)")
    g.add_argument("--max-length", type=positive_int, default=128, help="max tokens per example (default: 128)")
    g.add_argument("--encode-batch-size", type=positive_int, default=64)
    add_bf16_arg(g)
    g.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    g.add_argument("--cache-dir", help="feature cache folder (default: $PRIVNLU_CACHE or ~/.cache/privnlu)")
    g.add_argument("--refresh-cache", action="store_true", help="recompute cached features")


def add_bf16_arg(p) -> None:
    """``--bf16 [auto|on|off]``: bfloat16 autocast of the encoder; ``--bf16`` alone means ``on`` (the old flag)."""
    p.add_argument("--bf16", nargs="?", const="on", default=None, choices=["auto", "on", "off"],
                   help="bfloat16 autocast for the encoder in training and encoding: auto (default: on where the "
                        "CPU (AVX-512 BF16, AMX) or GPU runs bf16 natively), on, or off; --bf16 alone means on")


def add_texthide_args(p: argparse.ArgumentParser, *, grid: bool = False) -> None:
    g = p.add_argument_group("TextHide")
    if not grid:
        g.add_argument("--scheme", default="none", choices=["none", "texthide", "dp"],
                       help="privacy scheme: none (default), texthide, or dp (DP instance encoding, Xie & Hong 2022)")
        g.add_argument("--m", type=m_value, default=None,
                       help="mask pool size: 0 (no mask), N, or inf (default: 256 with texthide, 16 with dp)")
        g.add_argument("--k", type=int, default=None, help="representations mixed per encoding (default with texthide/dp: 4)")
    g.add_argument("--inter", action="store_true", help="TextHide-inter: floor(k/2) components from a public corpus")
    g.add_argument("--public", default="wiki", help="public corpus: 'wiki' (packaged) or a text file, one sentence per line")
    g.add_argument("--public-size", type=positive_int, default=20000, help="public sentences to use (default: 20000)")
    if not grid:
        add_dp_args(p)


def add_dp_args(p: argparse.ArgumentParser) -> None:
    """``--dp-*``: DP instance encoding settings (used with --scheme dp)."""
    g = p.add_argument_group("DP instance encoding (--scheme dp)")
    g.add_argument("--dp-mechanism", default="gaussian", choices=["gaussian", "laplace"], help="noise (default: gaussian)")
    g.add_argument("--dp-epsilon", type=float, default=8.0,
                   help="target epsilon per example for the whole run, every epoch's encodings included (default: 8)")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="target delta (default: 1e-5)")
    g.add_argument("--dp-clip", type=float, default=1.0, help="clipping bound C: L2 for gaussian, L1 for laplace (default: 1)")
    g.add_argument("--dp-calibration", default="correct", choices=["correct", "paper"],
                   help="correct (default) or paper: the paper's per-encoding calibration, NOT a valid DP guarantee")
    g.add_argument("--dp-clean-queries", action="store_true",
                   help="evaluate on clipped, masked dev queries without noise (the guarantee then covers the "
                        "training release only; queries are not protected)")


def dp_settings(args: argparse.Namespace):
    from ..mechanisms.dp import DPSettings

    return DPSettings(mechanism=args.dp_mechanism, epsilon=args.dp_epsilon, delta=args.dp_delta, clip=args.dp_clip,
                      calibration=args.dp_calibration, noisy_queries=not args.dp_clean_queries)


def add_train_args(p: argparse.ArgumentParser, *, epochs: int = 20, lr: float = 1e-3) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--mode", default="frozen", choices=["frozen", "joint"], help="frozen features + MLP head, or joint fine-tuning")
    g.add_argument("--epochs", type=positive_int, default=epochs)
    g.add_argument("--lr", type=float, default=lr, help=f"head learning rate (default: {lr})")
    g.add_argument("--encoder-lr", type=float, default=2e-5, help="encoder learning rate in joint mode (default: 2e-5)")
    g.add_argument("--batch-size", type=positive_int, default=64)
    g.add_argument("--weight-decay", type=float, default=0.01)
    g.add_argument("--hidden", type=int_list, help="head hidden sizes, e.g. 768,768,768 (default: d,d,d)")
    g.add_argument("--eval-mask", default="pool", choices=list(EVAL_MASKS),
                   help="dev representations are never mixed; 'pool' masks each with a pool mask as the data owner "
                        "would (the reference code's behaviour, default), 'none' evaluates on raw representations")
    g.add_argument("--abs-input", action="store_true",
                   help="train the head on |x| (mask-invariant: it needs no key, which shows how little the masks hide)")
    g.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    g.add_argument("--quiet", action="store_true", help="no progress bars")


def train_config(args: argparse.Namespace) -> TrainConfig:
    from ..training import TrainConfig

    return TrainConfig(
        epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, weight_decay=args.weight_decay,
        hidden=tuple(args.hidden) if args.hidden else None, eval_mask=args.eval_mask,
        abs_input=getattr(args, "abs_input", False), seed=args.seed,
    )


def register_user_files(args: argparse.Namespace) -> None:
    """With --train-file, register the user's files under the --task name."""
    if not getattr(args, "train_file", None):
        return
    if not args.dev_file:
        raise PrivnluError("--train-file needs --dev-file as well")
    from ..data.tasks import register_table_task

    register_table_task(args.task, args.train_file, args.dev_file, text_col=args.text_col, label_col=args.label_col,
                        text_pair_col=args.text_pair_col, regression=args.regression)


def run_spec(args: argparse.Namespace, **override) -> RunSpec:
    from ..training.engine import RunSpec

    register_user_files(args)
    scheme = override.pop("scheme", getattr(args, "scheme", "none"))
    m = override.pop("m", getattr(args, "m", None))
    k = override.pop("k", getattr(args, "k", None))
    if scheme in ("texthide", "dp"):
        m = (256 if scheme == "texthide" else 16) if m is None else m
        k = 4 if k is None else k
        if scheme == "dp":
            override.setdefault("dp", dp_settings(args))
            if override["dp"].calibration == "paper":
                say("WARNING: --dp-calibration paper is NOT a valid DP guarantee; the results JSON gives the epsilon "
                    "this run really has")
    else:
        m, k = (0 if m is None else m), (1 if k is None else k)
    if args.lr is not None and not args.lr > 0:
        raise PrivnluError(f"the learning rate must be positive, not {args.lr}")
    return RunSpec(
        task=args.task, model=args.model, pooling=args.pooling, scheme=scheme, m=m, k=k,
        inter=override.pop("inter", args.inter), public=args.public, public_size=args.public_size, mode=args.mode,
        max_length=args.max_length, train_limit=args.train_limit, dev_limit=args.dev_limit, data_dir=args.data_dir,
        cache_dir=args.cache_dir, bf16=args.bf16 or "auto", device=args.device, encode_batch_size=args.encode_batch_size,
        encoder_lr=args.encoder_lr, train=train_config(args), **override,
    )


def warn_seed(args: argparse.Namespace) -> None:
    if getattr(args, "seed", None) is not None:
        from ..rng import SEED_WARNING

        sys.stderr.write(f"WARNING: {SEED_WARNING}\n")


def say(msg: str) -> None:
    sys.stderr.write(msg + "\n")



def add_recipe_args(p: argparse.ArgumentParser, *, epochs: int = 20) -> None:
    """Options shared by `demo` and `reproduce`."""
    p.add_argument("--epochs", type=positive_int, default=epochs)
    p.add_argument("--train-limit", type=positive_int, help="use only the first N training examples")
    p.add_argument("--data-dir", help="GLUE data folder")
    p.add_argument("--cache-dir", help="feature cache folder")
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
