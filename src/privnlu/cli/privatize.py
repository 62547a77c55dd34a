"""``privnlu dchi privatize``: d_chi-privatize a file of texts on the user's side before it leaves the device."""

from __future__ import annotations

import argparse

from ..params import POS_INT, Option
from .common import scheme_from_args, say, warn_seed
from .options import add, scheme_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("privatize", help="d_chi-privatize a text file (text-to-text, token-rep or sequence-rep)",
                       description="Read one text per line, privatize each with d_chi-privacy over the encoder's "
                                   "token-embedding space (Qu et al. 2021), and write the result atomically. "
                                   "dchi-text: privatized text, one per line; dchi-token: noisy token embeddings "
                                   "(.npz); dchi-sequence: noisy sentence representations (.npz). Large files are "
                                   "streamed.")
    add(p, Option("input", help="UTF-8 text file, one text per line", kind="positional"), "out",
        scheme_options("once")[0].but(default="dchi-text", help="d_chi scheme: dchi-text, dchi-token or dchi-sequence"),
        "eta", "model", "pooling", "max_length",
        Option("hnsw", "--hnsw", "dchi-text: approximate nearest token with a FAISS HNSW index (same guarantee, "
               "faster, lower fidelity)", kind="flag"),
        Option("chunk_lines", "--chunk-lines", "lines processed at a time", int, default=256, range=POS_INT),
        "seed", "ledger",
        out={"help": "output file (.txt for dchi-text, .npz for dchi-token and dchi-sequence)", "required": True},
        eta={"required": True, "group": ""},
        pooling={"help": "dchi-sequence: the sentence representation (auto: the model's own)", "group": ""},
        model={"group": ""}, max_length={"group": "", "help": "max tokens per text incl. [CLS]/[SEP]; longer texts "
                                                                "are truncated with a warning"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..owner.release import release_text_file

    warn_seed(args)
    release_text_file(scheme_from_args(args), args.input, args.out, model=args.model, pooling=args.pooling,
                      max_length=args.max_length, hnsw=args.hnsw, chunk_lines=args.chunk_lines, seed=args.seed,
                      ledger=args.ledger, log=say)
    return 0
