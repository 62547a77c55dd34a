"""``privnlu encode``: privatize a split's representations for a downstream party."""

from __future__ import annotations

import argparse

from .common import DATA, ENCODER, run_spec, say, warn_seed
from .options import add, scheme_options

RELEASE = ("split", "encodings_per_example", "batch_size", "seed", "out", "key_out", "ledger", "force")
RELEASE_HELP = dict(out={"help": "shared output file (safetensors, e.g. enc.safetensors): encodings and mixed labels",
                         "required": True},
                    force={"help": "replace existing --out and --key-out files (a replaced key leaves its release "
                                   "undecodable)"},
                    batch_size={"help": "examples per encoding batch", "group": ""}, task={"required": True})


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="write TextHide or DP encodings and mixed labels for a downstream party",
                       description="Encode a split under a per-batch scheme (texthide, texthide-inter, dp-ie; none "
                                   "writes the clean representations in the same format). The shared file holds "
                                   "only encodings and mixed labels; the key file (mask pool and one-time keys) is "
                                   "written separately, mode 0600.")
    add(p, *DATA, *ENCODER, *scheme_options("none", "per-batch"), "public", "public_size", *RELEASE,
        scheme={"default": "texthide"}, **RELEASE_HELP)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, *, scheme: str | None = None, command: str = "encode") -> int:
    """``privnlu encode`` (and, with ``scheme="dp-ie"``, ``privnlu dp encode``)."""
    from ..training import TrainConfig
    from ..owner.release import release_split

    warn_seed(args)
    spec = run_spec(args, mode="frozen", train=TrainConfig(), **({"scheme": _scheme(args, scheme)} if scheme else {}))
    release_split(spec, args.split, args.out, args.key_out, encodings=args.encodings_per_example,
                  batch_size=args.batch_size, seed=args.seed, ledger=args.ledger, command=command,
                  own_files=bool(args.train_file), progress=not args.quiet, refresh_cache=args.refresh_cache, log=say)
    return 0


def _scheme(args: argparse.Namespace, name: str):
    from .common import scheme_from_args

    return scheme_from_args(args, name)
