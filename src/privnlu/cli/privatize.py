"""``privnlu dchi privatize``: d_chi-privatize a file of texts on the user's side before it leaves the device."""

from __future__ import annotations

import argparse
from pathlib import Path

from typing import TYPE_CHECKING

from ..choices import DCHI_MECHANISMS as MECHANISMS
from ..errors import PrivnluError
from .common import positive_int, say, warn_seed

if TYPE_CHECKING:
    from ..mechanisms.dchi_text import DchiPrivatizer

MAX_TRUNCATION_LINES = 5


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("privatize", help="d_chi-privatize a text file (token rep, text-to-text or sequence rep)",
                       description="Read one text per line, privatize each with d_chi-privacy over the encoder's "
                                   "token-embedding space (Qu et al. 2021), and write the result atomically. "
                                   "text: privatized text, one per line; rep: noisy token embeddings (.npz); "
                                   "sequence: noisy sentence representations (.npz). Large files are streamed.")
    p.add_argument("input", help="UTF-8 text file, one text per line")
    p.add_argument("--out", required=True, help="output file (.txt for text, .npz for rep/sequence)")
    p.add_argument("--dchi-mechanism", default="text", help=f"d_chi release form: one of {', '.join(MECHANISMS)} (default: text)")
    p.add_argument("--eta", type=float, required=True, help="privacy parameter eta > 0 (smaller = more noise); "
                                                             "see `privnlu dchi calibrate`")
    p.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--pooling", default="cls", choices=["cls", "pooler", "mean"], help="sentence representation for --dchi-mechanism sequence")
    p.add_argument("--max-length", type=positive_int, default=128, help="max tokens per text incl. [CLS]/[SEP]; longer texts are truncated with a warning")
    p.add_argument("--hnsw", action="store_true", help="text: approximate nearest token with a FAISS HNSW index (same guarantee, faster, lower fidelity)")
    p.add_argument("--chunk-lines", type=positive_int, default=256, help="lines processed at a time (default: 256)")
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes the noise reproducible")
    from .encode import add_ledger_arg

    add_ledger_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..mechanisms.dchi import check_eta
    from ..mechanisms.dchi_text import OUTPUT_SUFFIX, DchiPrivatizer, check_mechanism, privatize_file
    from ..rng import SecretGenerator

    check_mechanism(args.dchi_mechanism)
    check_eta(args.eta)
    src, out = Path(args.input), Path(args.out)
    if not src.is_file():
        raise PrivnluError(f"input file {src} not found")
    if src.stat().st_size == 0:
        raise PrivnluError(f"input file {src} is empty: nothing to privatize")
    if out.resolve() == src.resolve():
        raise PrivnluError("--out must differ from the input file")
    if out.suffix != OUTPUT_SUFFIX[args.dchi_mechanism]:
        raise PrivnluError(f"--out for --dchi-mechanism {args.dchi_mechanism} should end in {OUTPUT_SUFFIX[args.dchi_mechanism]}")
    ledger = _ledger_check(args, src, out)
    warn_seed(args)
    rng = SecretGenerator(args.seed, warn=False)
    priv = DchiPrivatizer.load(eta=args.eta, mechanism=args.dchi_mechanism, model=args.model, pooling=args.pooling, rng=rng,
                               max_length=args.max_length, hnsw=args.hnsw)
    if args.dchi_mechanism != "sequence":
        warn_if_near_no_op(priv, src, args.eta)
    shown = [0]

    def warn(line: int, tokens: int) -> None:
        shown[0] += 1
        if shown[0] <= MAX_TRUNCATION_LINES:
            say(f"warning: line {line} has {tokens} tokens; truncated to {args.max_length - 2} (+[CLS]/[SEP] = --max-length {args.max_length})")

    summary = privatize_file(priv, src, out, chunk_lines=args.chunk_lines, on_truncate=warn)
    if len(summary.truncated) > MAX_TRUNCATION_LINES:
        say(f"warning: {len(summary.truncated)} texts in all were truncated to --max-length {args.max_length}")
    if ledger is not None:
        ledger[0].record(*ledger[1:])
    say(f"privatized {summary.texts} texts with {args.dchi_mechanism} at eta = {args.eta:g}; wrote {out}")
    return 0


#: warn when at least this share of the input's tokens is expected to survive (text) or be inverted (rep)
NEAR_NO_OP = 0.95


def warn_if_near_no_op(priv: DchiPrivatizer, src: Path, eta: float, *, lines: int = 200) -> float:
    """Estimate, on the input's first ``lines`` texts, the share of tokens that M_txt leaves unchanged at ``eta``
    (= nearest-neighbour inversion accuracy of M_rep); warn when it is at least :data:`NEAR_NO_OP`. The estimate's
    noise is a fixed public draw, never applied to the data."""
    from ..attacks.dchi_inversion import inversion_accuracy
    from ..mechanisms.dchi_stats import token_ids_of
    from ..rng import SecretGenerator

    with open(src, encoding="utf-8", errors="replace") as fh:
        texts = [t for _, t in zip(range(lines), fh) if t.strip()]
    if not texts:
        return 0.0
    ids = token_ids_of(texts, priv.tokenizer)
    ids = ids[~priv.space.special[ids]]
    if len(ids) == 0:
        return 0.0
    survival = inversion_accuracy(priv.space, ids, eta, SecretGenerator(0, warn=False))
    if survival >= NEAR_NO_OP:
        say(f"warning: at eta = {eta:g} about {100 * survival:.0f} % of this text's tokens come out unchanged on this "
            "model: the release hides almost nothing; choose eta with `privnlu dchi calibrate`")
    return survival


def _ledger_check(args: argparse.Namespace, src: Path, out: Path):
    """With --ledger: refuse a release over the owner's eta budget before any work; (ledger, release, hashes) to record."""
    if not getattr(args, "ledger", None):
        return None
    from ..ledger import Ledger, dchi_release, lines_hashes

    ledger, hashes = Ledger.open(args.ledger), lines_hashes(src)
    model = Path(args.model).name if args.model else "all-MiniLM-L6-v2 (packaged)"
    release = dchi_release("privatize", src.name, args.dchi_mechanism, args.eta, model, str(out))
    ledger.check(release, hashes)
    return ledger, release, hashes
