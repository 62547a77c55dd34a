"""Every command-line option, defined once: its flag, type, range, default and help (:data:`OPTIONS`).

A command names the options it takes (:func:`add`, with per-command overrides of a default or help where a
command means something narrower); the privacy schemes' parameters come from the registry
(:func:`privnlu.schemes.options`). An option's ``writes`` says what kind of location it names: ``check_outputs``
checks every one of the chosen command before any work starts. Renamed options keep their old spelling for one
release (:data:`RENAMED`), as a hidden alias that prints one deprecation line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..choices import DP_MECHANISMS, EVAL_MASKS, MODES, POOLINGS
from ..errors import PrivnluError
from ..params import DELTA, EPSILON, ETA, POS_INT, RATE, SEED, Option, Range, float_list, int_list, name_list

F, I = float, int
ETAS = Range(lo=0, lo_open=True, hi=1e12, items=True)
_ALL = [
    # data
    Option("task", "--task", "task name (see `privnlu tasks`), e.g. sst2, cola, tweets", group="data"),
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
    Option("model", "--model", "a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)", group="encoder"),
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
           "a task; reads only the shared file, never a key file. There is no ground truth, so the output is the "
           "attacker's answer (nearest sentences and cosines), not a success rate", metavar="FILE"),
    # DP accounting and audits
    Option("dp_mechanism", "--dp-mechanism", "DP noise (gaussian: L2 clipping, laplace: L1)", default="gaussian",
           choices=DP_MECHANISMS),
    Option("dp_epsilon", "--dp-epsilon", "target epsilon per example for the whole release", F, range=EPSILON),
    Option("dp_delta", "--dp-delta", "target delta", F, default=1e-5, range=DELTA),
    Option("dp_clip", "--dp-clip", "clipping bound C (L2 for gaussian, L1 for laplace)", F, default=1.0,
           range=Range(lo=0, lo_open=True, hi=1e12)),
    Option("dp_calibration", "--dp-calibration", "correct, or paper: the paper's per-encoding calibration, NOT a "
           "valid DP guarantee", default="correct", choices=("correct", "paper")),
    Option("dp_epsilons", "--dp-epsilons", "comma-separated epsilons per example of the whole release", float_list,
           range=Range(lo=0, lo_open=True, hi=EPSILON.hi, items=True)),
    Option("dim", "--dim", "representation width d", I, default=384, range=POS_INT),
    Option("k", "--k", "representations mixed per encoding", I, default=4, range=POS_INT),
    Option("budget_epsilon", "--budget-epsilon", "set the owner's budget in the ledger: epsilon per example over all "
           "DP releases (at --budget-delta); later releases above it are refused", F, range=EPSILON),
    Option("budget_delta", "--budget-delta", "delta of the budget (default: 1e-5)", F, range=DELTA),
    Option("budget_eta", "--budget-eta", "set the owner's budget for d_chi releases: total eta per example", F,
           range=ETA),
    Option("draws", "--draws", "draws per hypothesis", I, range=POS_INT),
    Option("eta", "--eta", "privacy parameter eta > 0 of d_chi (smaller = more noise)", F, range=ETA),
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


def option(name: str, **changes: Any) -> Option:
    """The catalogue's option ``name``, or a scheme parameter's, with per-command ``changes``."""
    if name in OPTIONS:
        return OPTIONS[name].but(**changes) if changes else OPTIONS[name]
    from ..schemes import options as scheme_options

    found = {o.dest: o for o in scheme_options()}
    if name not in found:
        raise KeyError(f"no option '{name}' in the catalogue or among the scheme parameters")
    return found[name].but(**changes) if changes else found[name]


def add(parser: argparse.ArgumentParser, *items: str | Option, **changes: dict[str, Any]) -> None:
    """Add options to ``parser`` in the order given: catalogue names or :class:`Option` objects of the command's own
    (``changes[dest]`` overrides either, e.g. another default); options of one ``group`` share an argument group.
    ``changes[name]["check"]``: where an output option without a value will write (checked like a given value)."""
    groups: dict[str, argparse._ActionsContainer] = {}
    for item in items:
        change = dict(changes.get(item if isinstance(item, str) else item.dest, {}))
        check = change.pop("check", None)
        opt = item.but(**change) if isinstance(item, Option) else option(item, **change)
        where = parser if not opt.group else groups.setdefault(opt.group, parser.add_argument_group(opt.group))
        opt.add_to(where)
        if opt.writes:
            outputs(parser)[opt.dest] = (opt.writes, check if check is not None else opt.default)


def scheme_options(*releases: str) -> tuple[Option, ...]:
    """``--scheme`` and the parameters of the schemes that release as ``releases`` say (``"none"``,
    ``"per-batch"``, ``"once"``; all schemes if none is given), each parameter once
    (:func:`privnlu.schemes.options`)."""
    from ..schemes import get, names, options as params

    chosen = tuple(n for n in names() if not releases or get(n).release in releases)
    return (OPTIONS["scheme"].but(help=f"privacy scheme: {', '.join(chosen)}"), *params(chosen))


# -- renamed options ---------------------------------------------------------------------------------------------

#: (command path, old spelling) -> new spelling; the old one works until the next release with one notice
RENAMED: dict[tuple[str, str], str] = {
    **{(c, f"--{o}"): f"--dp-{o}" for c in ("dp account", "dp encode", "dp audit")
       for o in ("epsilon", "delta", "clip", "calibration", "mechanism")},
    **{(c, "--epochs"): "--encodings-per-example" for c in ("encode", "dp account", "dp encode", "dp audit")},
    ("attack reconstruct", "--epochs"): "--encodings-per-example",
    ("attack reconstruct", "--calibration"): "--dp-calibration",
    ("dchi privatize", "--mechanism"): "--scheme", ("dchi privatize", "--dchi-mechanism"): "--scheme",
    ("dchi pretrain", "--mechanism"): "--scheme", ("dchi pretrain", "--dchi-mechanism"): "--scheme",
    ("dp audit", "--dchi-mechanism"): "--scheme", ("dchi finetune", "--modes"): "--schemes",
    ("sweep", "--m"): "--ms", ("sweep", "--k"): "--ks",
    ("audit", "--attack-epochs"): "--encodings-per-example",
    ("train", "--overwrite"): "--force",
}
#: values of an old spelling that now belong to another option or name: (command, old spelling) ->
#: {old value: (new spelling, new value)}
_DCHI = {"rep": ("--scheme", "dchi-token"), "text": ("--scheme", "dchi-text"), "sequence": ("--scheme", "dchi-sequence")}
MOVED_VALUES: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    **{(c, o): _DCHI for c in ("dchi privatize", "dchi pretrain", "dp audit") for o in ("--mechanism", "--dchi-mechanism")},
    ("dp audit", "--mechanism"): {"dchi-rep": ("--scheme", "dchi-token"), "dchi-txt": ("--scheme", "dchi-text")},
}


class DeprecatedAlias(argparse.Action):
    """The old spelling of a renamed option: hidden from ``--help``; using it prints one line on stderr naming the
    new spelling, then stores the value as the new option would."""

    def __init__(self, option_strings, dest, *, new: argparse.Action, moved: dict | None = None, **kwargs) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.moved = new, moved or {}

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if isinstance(self.new, argparse._StoreTrueAction):  # an old flag
            values = True
        moved = isinstance(values, str) and values in self.moved
        target, value = self.moved[values] if moved else (self.new, values)
        use = target.option_strings[0] + (f" {value}" if moved else "")
        sys.stderr.write(f"privnlu: {option_string} is deprecated and will be removed in the next release; use {use}\n")
        if isinstance(target, argparse.Action) and target.type is not None and not moved:
            value = values
        setattr(namespace, target.dest, value)


def add_deprecated_aliases(path: tuple[str, ...], p: argparse.ArgumentParser) -> None:
    """Add the hidden old spellings of :data:`RENAMED` to the parser of command ``path``."""
    cmd = " ".join(path)
    for (c, old), new in RENAMED.items():
        if c != cmd or old in p._option_string_actions or new not in p._option_string_actions:  # a help-only stub
            continue
        action = p._option_string_actions[new]
        moved = {v: (p._option_string_actions[o], nv) for v, (o, nv) in MOVED_VALUES.get((c, old), {}).items()}
        choices = None if action.choices is None or moved else [*action.choices]
        flag = isinstance(action, argparse._StoreTrueAction)
        p.add_argument(old, action=DeprecatedAlias, new=action, moved=moved, dest=action.dest,
                       type=None if moved or flag else action.type, choices=choices, default=argparse.SUPPRESS,
                       help=argparse.SUPPRESS, **({"nargs": 0} if flag else {}))
    for (c, old), moved_values in MOVED_VALUES.items():  # an old spelling whose values all moved elsewhere
        if c == cmd and old not in p._option_string_actions and (c, old) not in RENAMED:
            targets = {v: (p._option_string_actions[o], nv) for v, (o, nv) in moved_values.items()
                       if o in p._option_string_actions}
            if targets:
                new = next(iter(targets.values()))[0]
                p.add_argument(old, action=DeprecatedAlias, new=new, moved=targets, dest=new.dest,
                               default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Yield ``(command path, parser)`` for the parser and every subparser below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, path + (name,))


def finalize(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``allow_abbrev=False``, ``--quiet`` on every command, ``--force`` on every command that replaces a result
    file, FILE/DIR metavars, and the old spellings, on the whole tree."""
    for path, p in walk(parser):
        p.allow_abbrev = False
        if p._defaults.get("func") is None:
            continue
        if not any(a.dest == "quiet" for a in p._actions):
            OPTIONS["quiet"].add_to(p)  # main() silences tqdm
        writes = outputs(p)
        if replaces_files(p) and not any(a.dest == "force" for a in p._actions):
            OPTIONS["force"].but(help="replace an existing output file").add_to(p)
        for a in p._actions:
            if a.dest in writes and a.metavar is None:
                a.metavar = "DIR" if writes[a.dest][0] == "dir" else "FILE"
        add_deprecated_aliases(path, p)
    return parser


def outputs(p: argparse.ArgumentParser) -> dict[str, tuple[str, str | None]]:
    """dest -> (kind, location when not given) of every location the command of parser ``p`` writes (kind "file",
    "dir", "key" or "ledger"; kept on the parser by :func:`add`)."""
    if not hasattr(p, "privnlu_writes"):
        p.privnlu_writes = {}  # type: ignore[attr-defined]
    return p.privnlu_writes  # type: ignore[attr-defined]


def replaces_files(p: argparse.ArgumentParser) -> bool:
    """True if the command of parser ``p`` writes a result file that could replace an earlier one."""
    return any(kind == "file" for kind, _ in outputs(p).values())


def chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command ``args`` were parsed for."""
    p = parser
    while True:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if not subs or name not in subs[0].choices:
            return p
        p = subs[0].choices[name]


def check_output(path: str | os.PathLike[str], kind: str, flag: str, *, replace: bool = True) -> None:
    """One line (PrivnluError) unless ``path`` can be written as a ``kind`` ('file' or 'dir'); creates nothing.
    ``replace=False``: an existing file is refused too (the caller's ``--force`` lifts it)."""
    p = Path(path)
    if str(path) == "":
        raise PrivnluError(f"{flag}: empty path")
    if p.exists():
        if kind == "file" and p.is_dir():
            raise PrivnluError(f"{flag} {path} is a folder; give a file name")
        if kind == "dir" and not p.is_dir():
            raise PrivnluError(f"{flag} {path} is a file, not a folder")
        if kind == "file" and not replace:
            raise PrivnluError(f"{flag} {path} exists: refusing to replace an earlier result; choose another file, "
                               "or add --force")
        where = p if kind == "dir" else p.parent
        if not os.access(where, os.W_OK | os.X_OK):
            raise PrivnluError(f"{flag} {path}: the folder {where} is not writable")
        return
    anc = p.absolute().parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise PrivnluError(f"{flag} {path}: {anc} is a file, not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise PrivnluError(f"{flag} {path}: the folder {anc} is not writable")


def check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check every output location of the chosen command before it runs: writable, of the right kind, an existing
    result file or key refused without ``--force``, no two outputs on one file."""
    p = chosen(parser, args)
    force = bool(getattr(args, "force", False) or getattr(args, "resume", False))  # resuming continues an output
    files: dict[Path, str] = {}
    for dest, (kind, default) in outputs(p).items():
        value = getattr(args, dest, None)
        action = next(a for a in p._actions if a.dest == dest)
        flag = action.option_strings[0] if action.option_strings else dest
        if value is None or value == "":
            if default not in (None, ""):
                check_output(default, "dir" if kind == "dir" else "file", f"{flag} (default {default})",
                             replace=kind != "file" or force)
            continue
        if kind == "key" and Path(value).exists() and not force:
            raise PrivnluError(f"{flag} {value} exists: refusing to replace a key file (without it the release it "
                               "belongs to cannot be decoded); choose another file, or add --force")
        check_output(value, "dir" if kind == "dir" else "file", flag, replace=kind in ("dir", "ledger", "key") or force)
        if kind != "dir":
            resolved = Path(value).resolve()
            if resolved in files:
                raise PrivnluError(f"{files[resolved]} and {flag} name the same file {value}; give different files")
            files[resolved] = flag
