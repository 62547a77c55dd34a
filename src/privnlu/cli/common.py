"""What several commands share: the option groups they take, and the specs they build from their flags.

Building a parser imports no torch (``privnlu X --help`` answers at once): this module imports only the catalogue,
the scheme registry's declarations and the standard library at module level.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import PrivnluError

if TYPE_CHECKING:
    from ..schemes import Scheme
    from ..training.engine import RunSpec

#: the options of a task's data, of the encoder, and of a training run
DATA = ("task", "data_dir", "train_limit", "dev_limit", "train_file", "dev_file", "text_col", "text_pair_col",
        "label_col", "regression")
ENCODER = ("model", "pooling", "max_length", "encode_batch_size", "bf16", "device", "cache_dir", "refresh_cache")
TRAINING = ("mode", "epochs", "lr", "encoder_lr", "batch_size", "weight_decay", "hidden", "eval_mask", "abs_input",
            "seed")


def say(msg: str) -> None:
    sys.stderr.write(msg + "\n")


def warn_seed(args: argparse.Namespace) -> None:
    if getattr(args, "seed", None) is not None:
        from ..rng import SEED_WARNING

        say(f"WARNING: {SEED_WARNING}")


def register_user_files(args: argparse.Namespace) -> None:
    """With --train-file, register the user's files under the --task name."""
    if not getattr(args, "train_file", None):
        return
    if not args.dev_file:
        raise PrivnluError("--train-file needs --dev-file as well")
    from ..data.tasks import register_table_task

    register_table_task(args.task, args.train_file, args.dev_file, text_col=args.text_col, label_col=args.label_col,
                        text_pair_col=args.text_pair_col, regression=args.regression)


def scheme_from_args(args: argparse.Namespace, name: str | None = None) -> Scheme:
    """The scheme named by ``--scheme`` (or ``name``) with the parameters given on the command line (the rest at
    the scheme's defaults). ``--scheme texthide --inter`` is the old spelling of ``--scheme texthide-inter``."""
    from ..schemes import canonical, create, get, options

    name = canonical(name or args.scheme)
    if getattr(args, "inter", False) and "inter" not in {o.dest for o in get(name).options()}:
        if name != canonical("texthide", warn=False):
            raise PrivnluError(f"--inter mixes in a public corpus; scheme {name} takes no --inter")
        say("privnlu: --scheme texthide --inter is deprecated and will be removed in the next release; use "
            "--scheme texthide-inter")
        name, args.inter = "texthide-inter", False
    given = {o.dest: getattr(args, o.dest, None) for o in get(name).options()}
    unused = [o.flags[0] for o in options() if o.dest not in given and getattr(args, o.dest, None) not in (None, False)]
    if unused:
        raise PrivnluError(f"scheme {name} takes no {', '.join(unused)}")
    scheme = create(name, **{k: v for k, v in given.items() if v is not None and v is not False})
    if (warning := getattr(scheme, "warning", None)) is not None:  # a chosen setting that is not what it claims
        say(warning)
    return scheme


def train_config(args: argparse.Namespace, **override: Any):
    from ..training import TrainConfig

    return TrainConfig(**{
        "epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "weight_decay": args.weight_decay,
        "hidden": tuple(args.hidden) if getattr(args, "hidden", None) else None,
        "eval_mask": getattr(args, "eval_mask", "pool"), "abs_input": getattr(args, "abs_input", False),
        "seed": args.seed, **override})


def run_spec(args: argparse.Namespace, **override: Any) -> RunSpec:
    """The :class:`~privnlu.training.engine.RunSpec` of a command's flags (``override`` replaces fields)."""
    from ..training.engine import RunSpec

    register_user_files(args)
    fields = dict(
        task=args.task, model=args.model, pooling=args.pooling, public=args.public, public_size=args.public_size,
        mode=getattr(args, "mode", "frozen"), max_length=args.max_length, train_limit=args.train_limit,
        dev_limit=args.dev_limit, data_dir=args.data_dir, cache_dir=args.cache_dir, bf16=args.bf16 or "auto",
        device=args.device, encode_batch_size=args.encode_batch_size,
        encoder_lr=getattr(args, "encoder_lr", 2e-5))
    fields.update(override)
    if "scheme" not in fields:
        fields["scheme"] = scheme_from_args(args)
    if "train" not in fields:
        fields["train"] = train_config(args)
    return RunSpec(**fields)
