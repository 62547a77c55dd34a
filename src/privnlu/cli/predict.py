"""``privnlu predict``: apply a trained run (the folder ``privnlu train`` wrote) to new text."""

from __future__ import annotations

import argparse
import sys

from ..params import Option, Range
from .options import add


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="apply a trained run to new text (with the owner's key where the scheme needs one)",
                       description="Apply the model of a `privnlu train` run (its model/ folder) to new text. Queries "
                                   "are encoded as the run's evaluation encoded them (see the scheme's threat model): "
                                   "never mixed; with TextHide or DP instance encoding and --eval-mask pool, each is "
                                   "multiplied by a mask from the owner's secret pool (the key), after clipping and "
                                   "with the same noise for DP. A `federated` run's global model is applied as its "
                                   "server evaluated it (unmasked, no key); a `dchi finetune` model privatizes each "
                                   "query with its scheme and eta. Predictions are deterministic: where a query's "
                                   "encoding is random they average the head's probabilities over the whole mask "
                                   "pool, or over a fixed number of draws seeded from the query (--samples N: N "
                                   "fresh draws instead). Never runs code from the folder, never contacts the model "
                                   "hub. Writes CSV, TSV or JSONL (--out), else JSON lines on stdout.")
    add(p, Option("run", "--run", "the run folder `privnlu train` or `privnlu federated` wrote (or its model/ "
                  "subfolder), or a `dchi finetune` model folder (or its results JSON)", required=True),
        Option("text", "--text", "a text to classify; repeat for several", kind="append", group="input"),
        Option("text_pair", "--text-pair", "its second text, for sentence-pair tasks; repeat as --text", kind="append",
               group="input"),
        Option("input", "--input", "a file of texts: .txt (one per line, blank lines skipped), or .csv, .tsv, .jsonl "
               "with --text-col (and --text-pair-col)", group="input"),
        "text_col", "text_pair_col",
        Option("key", "--key", "the owner's key file (the run's mask pool, key.pt) where the scheme needs one "
               "(default: the run folder's key.pt)"),
        Option("samples", "--samples", "average N fresh random encodings of each query instead of the deterministic "
               "average (1: the paper's stochastic inference, one random pool mask)", parse=int,
               range=Range(1, 100_000, integer=True), metavar="N"),
        "model", "device", "encode_batch_size", "out", "force",
        text_col={"help": "text column of --input", "group": "input"},
        text_pair_col={"help": "second text column of --input, for sentence-pair tasks", "group": "input"},
        model={"help": "frozen runs: the base encoder's folder, if it is no longer where the run found it (checked "
                       "by fingerprint)", "group": ""},
        device={"group": ""}, encode_batch_size={"group": ""},
        out={"help": "predictions file: .csv, .tsv or .jsonl (default: JSON lines on stdout)"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..model_folder.predict import check_output_file, load, utility_warning
    from ..model_folder.predict_inputs import CHUNK, RowWriter, open_inputs

    out = check_output_file(args.out, force=args.force)
    inputs = open_inputs(args.text, args.text_pair, args.input, text_col=args.text_col,
                         text_pair_col=args.text_pair_col)  # every row checked, streamed, before the model loads
    model = load(args.run, key=args.key, model=args.model, device=args.device, samples=args.samples, warn=False)
    model.check_inputs([], [] if inputs.has_pairs else None)  # single texts or pairs, as the task takes
    warning = utility_warning(model.pipeline)
    if warning:  # after every check: a refused input stays one line
        sys.stderr.write(warning + "\n")
    if not args.quiet:
        sys.stderr.write(f"privnlu: {model.describe()}\n")
    with RowWriter(out, sys.stdout) as writer, tqdm(total=inputs.count, desc="predicting", unit="text",
                                                    disable=args.quiet, leave=False) as bar:
        for texts, pairs in inputs.chunks(max(CHUNK, args.encode_batch_size)):  # bounded memory, input order
            writer.write(model.predict(texts, pairs, batch_size=args.encode_batch_size))
            bar.update(len(texts))
    if out is not None and not args.quiet:
        sys.stderr.write(f"privnlu: {writer.written} predictions in {out}\n")
    return 0
