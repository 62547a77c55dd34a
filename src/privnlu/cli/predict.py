"""``privnlu predict``: apply a trained run (the folder ``privnlu train`` wrote) to new text.

Heavy imports (torch, transformers) happen inside :func:`run`, so ``privnlu predict --help`` stays fast.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from ..errors import PrivnluError

INPUT_SUFFIXES = (".txt", ".csv", ".tsv", ".jsonl")
OUTPUT_SUFFIXES = (".csv", ".tsv", ".jsonl")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="apply a trained run to new text (with the owner's key where the scheme needs one)",
                       description="Apply the model of a `privnlu train` run (its model/ folder) to new text. Queries "
                                   "are encoded as the run's evaluation encoded them: never mixed; with TextHide or DP "
                                   "instance encoding and --eval-mask pool (the default), each is multiplied by a mask "
                                   "from the owner's secret pool (the key), after clipping and with the same noise for "
                                   "DP. A `federated` run's global model is applied as its server evaluated it "
                                   "(unmasked, no key); a `dchi finetune` model privatizes each query with its "
                                   "mechanism and eta, as its dev set was. Writes CSV, TSV or JSONL (--out), else JSON "
                                   "lines on stdout.")
    p.add_argument("--run", required=True, help="the run folder `privnlu train` or `privnlu federated` wrote (or its "
                   "model/ subfolder), or a `dchi finetune` model folder (or its results JSON)")
    g = p.add_argument_group("input (one of --text or --input)")
    g.add_argument("--text", action="append", help="a text to classify; repeat for several")
    g.add_argument("--text-pair", action="append", help="its second text, for sentence-pair tasks; repeat as --text")
    g.add_argument("--input", help="a file of texts: .txt (one per line, blank lines skipped), or .csv, .tsv, .jsonl "
                                   "with --text-col (and --text-pair-col)")
    g.add_argument("--text-col", default="text", help="text column of --input (default: text)")
    g.add_argument("--text-pair-col", help="second text column of --input, for sentence-pair tasks")
    p.add_argument("--key", help="the owner's key file (the run's mask pool, key.pt) where the scheme needs one "
                                 "(default: the run folder's key.pt)")
    p.add_argument("--model", help="frozen runs: the base encoder's folder, if it is no longer where the run found it "
                                   "(checked by fingerprint)")
    p.add_argument("--out", help="predictions file: .csv, .tsv or .jsonl (default: JSON lines on stdout)")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--encode-batch-size", type=int, default=64, help="texts per encoder forward pass (default: 64)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no notes on stderr")
    p.set_defaults(func=run)


def read_inputs(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """The texts (and pair texts) of ``--text``/``--text-pair`` or ``--input``."""
    if bool(args.text) == bool(args.input):
        raise PrivnluError("give the texts with --text (repeatable) or --input FILE, one of them")
    if args.text:
        if args.text_pair and len(args.text_pair) != len(args.text):
            raise PrivnluError(f"{len(args.text)} --text but {len(args.text_pair)} --text-pair; give one pair per text")
        return list(args.text), list(args.text_pair) if args.text_pair else None
    if args.text_pair:
        raise PrivnluError("--text-pair goes with --text; with --input, name the column with --text-pair-col")
    path = Path(args.input)
    if not path.is_file():
        raise PrivnluError(f"--input {path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in INPUT_SUFFIXES:
        raise PrivnluError(f"--input {path}: unsupported file type '{suffix}' (use {', '.join(INPUT_SUFFIXES)})")
    from ..data.dataset import read_utf8

    if suffix == ".txt":
        if args.text_pair_col:
            raise PrivnluError("--text-pair-col needs a .csv, .tsv or .jsonl --input")
        texts = [line for line in read_utf8(path).splitlines() if line.strip()]
        pairs = None
    else:
        from ..data.generic import _read_records

        records = _read_records(path)
        cols = [c for c in (args.text_col, args.text_pair_col) if c]
        for col in cols:
            if records and col not in records[0]:
                raise PrivnluError(f"--input {path}: column '{col}' missing (found {sorted(records[0])})")
        texts = [str(r[args.text_col] or "") for r in records]
        pairs = [str(r[args.text_pair_col] or "") for r in records] if args.text_pair_col else None
    if not texts:
        raise PrivnluError(f"--input {path}: no texts found")
    return texts, pairs


def format_rows(rows: list[dict], suffix: str) -> str:
    """CSV/TSV with a header, or JSON lines."""
    if suffix == ".jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, delimiter="\t" if suffix == ".tsv" else ",", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def run(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else None
    if out is not None:
        if out.suffix.lower() not in OUTPUT_SUFFIXES:
            raise PrivnluError(f"--out {out}: use a .csv, .tsv or .jsonl file")
        if out.exists() and not args.force:
            raise PrivnluError(f"--out {out} exists: choose another file, or add --force to replace it")
    texts, pairs = read_inputs(args)

    from ..io import write_text_atomic
    from ..training.predict import load

    model = load(args.run, key=args.key, model=args.model, device=args.device)
    texts, pairs = model.check_inputs(texts, pairs)
    if not args.quiet:
        sys.stderr.write(f"privnlu: {model.describe()}\n")
    rows = model.predict(texts, pairs, batch_size=args.encode_batch_size, progress=not args.quiet)
    if out is None:
        sys.stdout.write(format_rows(rows, ".jsonl"))
    else:
        write_text_atomic(out, format_rows(rows, out.suffix.lower()))
        if not args.quiet:
            sys.stderr.write(f"privnlu: {len(rows)} predictions in {out}\n")
    return 0
