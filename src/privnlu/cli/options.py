"""What every subcommand's options may hold, in one place: numeric ranges, output locations and help text.

:func:`finalize` walks the whole argparse tree once, after every command has registered its options:

* every parser refuses abbreviated option names (``allow_abbrev=False``);
* every numeric option gets the range in :data:`RANGES` (checked as argparse parses the value, so a bad value is
  a one-line usage error with exit code 2) and its range and default are stated in ``--help``;
* an option without help text gets the shared text in :data:`HELP`;
* an output option's metavar says FILE or DIR (from :data:`OUTPUTS`);
* a renamed option's old spelling (:data:`RENAMED`) is a hidden alias that prints one deprecation line.

:func:`check_outputs` checks every output location of the chosen command (:data:`OUTPUTS`) before any work starts:
the nearest existing ancestor is a writable folder, and a file target is not a folder (a folder target not a file).
A command adds an output by adding one line to :data:`OUTPUTS`; ``tests/test_cli_reliability.py`` fails for any
``--out``-like option that is not declared here, and for any numeric option without a range.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import PrivnluError

#: the largest epsilon privnlu accepts (mechanisms.dp refuses more; the papers use at most 20)
MAX_EPSILON = 1000.0
#: the smallest delta: below this the PLD accountant's truncated tail mass exceeds delta (docs/dp_encoding.md)
MIN_DELTA = 1e-15


@dataclass(frozen=True)
class Range:
    """A closed/open interval for a number, or for every item of a comma-separated list.

    ``extra`` lists values allowed outside the interval (e.g. ``-1`` = all), with ``note`` saying what they mean.
    """

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    items: bool = False  # a comma-separated list of such numbers
    empty_ok: bool = False  # a list may be empty (means the default)
    inf_ok: bool = False  # 'inf' is a legal value (pool size m)
    extra: tuple[float, ...] = ()
    note: str = ""

    def text(self) -> str:
        what = "integer" if self.integer else "number"
        if self.lo > -math.inf and self.hi < math.inf:
            bounds = f"in {'(' if self.lo_open else '['}{_fmt(self.lo)}, {_fmt(self.hi)}{')' if self.hi_open else ']'}"
        elif self.lo > -math.inf:
            bounds = f"{'>' if self.lo_open else '>='} {_fmt(self.lo)}"
        elif self.hi < math.inf:
            bounds = f"{'<' if self.hi_open else '<='} {_fmt(self.hi)}"
        else:
            bounds = ""
        s = f"{what} {bounds}".strip() + (" or inf" if self.inf_ok else "")
        if self.extra:
            s += " or " + ", ".join(map(_fmt, self.extra))
        if self.items:
            s = f"comma-separated, each an {s}" if self.integer else f"comma-separated, each a {s}"
        return s + (f" ({self.note})" if self.note else "")

    def check(self, v: float) -> None:
        if v in self.extra:
            return
        if isinstance(v, float) and math.isnan(v):
            raise ValueError
        if math.isinf(v) and not (self.inf_ok and v > 0):
            raise ValueError
        if self.integer and not math.isinf(v) and int(v) != v:
            raise ValueError
        if v < self.lo or (self.lo_open and v == self.lo) or v > self.hi or (self.hi_open and v == self.hi):
            raise ValueError

    def wrap(self, parse: Callable[[str], Any] | None) -> Callable[[str], Any]:
        """An argparse ``type``: parse with ``parse`` (a list parser returns a list), then check the range."""

        def typed(text: str) -> Any:
            if parse is None:  # a string option that holds numbers: check them, keep the string
                value = _numbers(text, self.integer) if self.items else _number(text, self.integer)
            else:
                value = parse(text)
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            if self.items and not values and not self.empty_ok:
                raise argparse.ArgumentTypeError(f"'{text}' is empty; give {self.text()}")
            for v in values:
                try:
                    self.check(float(v))
                except (ValueError, TypeError):
                    raise argparse.ArgumentTypeError(f"'{text}' is out of range: {self.text()}") from None
            return text if parse is None else value

        typed.__name__ = getattr(parse, "__name__", "str")
        typed.range = self  # type: ignore[attr-defined]
        return typed


def _number(text: str, integer: bool) -> float:
    try:
        return int(text) if integer else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {'an integer' if integer else 'a number'}") from None


def _numbers(text: str, integer: bool) -> list[float]:
    return [_number(x.strip(), integer) for x in text.split(",") if x.strip()]


POS_INT = Range(lo=1, integer=True)
NONNEG_INT = Range(lo=0, integer=True)
POSITIVE = Range(lo=0, lo_open=True)
RATE = Range(lo=0, lo_open=True, hi=10.0)
PROB_OPEN = Range(lo=0, hi=1, lo_open=True, hi_open=True)
SEED = Range(lo=0, hi=2 ** 32 - 1, integer=True)
EPSILON = Range(lo=0, lo_open=True, hi=MAX_EPSILON)
DELTA = Range(lo=MIN_DELTA, hi=1, hi_open=True)
ETA = Range(lo=0, lo_open=True, hi=1e12)
POOL = Range(lo=0, integer=True, inf_ok=True, note="0 = no mask")

#: dest -> range, for every numeric option of every command; (command path, dest) overrides where a name means
#: something else in one command. Every float and int option must appear here (a test checks it).
RANGES: dict[str | tuple[str, str], Range] = {
    "train_limit": POS_INT, "dev_limit": POS_INT, "max_length": Range(lo=3, integer=True, note="incl. [CLS]/[SEP]"),
    "encode_batch_size": POS_INT, "batch_size": POS_INT, "public_size": POS_INT, "epochs": POS_INT,
    "encodings_per_example": POS_INT,
    "m": POOL, "m_grid": Range(lo=0, integer=True, inf_ok=True, items=True), "k": POS_INT,
    "k_grid": Range(lo=1, integer=True, items=True),
    "dp_epsilon": EPSILON, "dp_delta": DELTA, "dp_clip": Range(lo=0, lo_open=True, hi=1e12),
    "dim": POS_INT,
    "lr": RATE, "encoder_lr": RATE, "lstm_lr": RATE, "head_lr": RATE,
    "weight_decay": Range(lo=0, hi=1e3), "hidden": Range(lo=1, integer=True, items=True),
    "seed": SEED, "eta": ETA, "etas": Range(lo=0, lo_open=True, hi=1e12, items=True),
    "eta_range": Range(lo=0, lo_open=True, hi=1e12, items=True), "target": PROB_OPEN,
    "max_tokens": POS_INT, "sample": POS_INT, "draws": POS_INT, "chunk_lines": POS_INT,
    "sequence_epochs": POS_INT, "lstm_epochs": POS_INT, "lstm_hidden": POS_INT,
    "steps": POS_INT, "warmup_steps": NONNEG_INT, "mask_prob": Range(lo=0, hi=1, lo_open=True),
    "checkpoint_every": POS_INT, "stop_after": POS_INT, "eval_size": POS_INT, "corpus_limit": POS_INT,
    "clients": POS_INT, "rounds": POS_INT, "local_steps": POS_INT, "fraction_train": Range(lo=0, hi=1, lo_open=True),
    "min_clients": Range(lo=0, integer=True, note="0 = all clients"), "round_timeout": Range(lo=0, lo_open=True, hi=1e7),
    "pool_sizes": Range(lo=1, integer=True, items=True, empty_ok=True, note="empty = an even split"),
    "dropout": Range(lo=0, hi=1, hi_open=True), "eval_every": POS_INT,
    "dp_noise_multiplier": Range(lo=0, hi=1e6, note="0 = off"),
    "record_wire": Range(lo=0, integer=True, extra=(-1,), note="-1 = every round, 0 = none"),
    "dims": Range(lo=1, integer=True, items=True), "ks": Range(lo=0, integer=True, items=True, note="0 = no TextHide"),
    "trials": POS_INT, "iterations": POS_INT, "round": POS_INT, "node": NONNEG_INT,
    "queries": POS_INT, "inv_epochs": POS_INT, "aux_size": POS_INT, "sim_releases": POS_INT, "pairs": POS_INT,
    "budget_epsilon": EPSILON, "budget_delta": DELTA, "budget_eta": ETA,
    "target_loss": Range(lo=0, lo_open=True, hi=100),
    ("federated", "checkpoint_every"): Range(lo=0, integer=True, note="0 = only at the end"),
    "dp_epsilons": Range(lo=0, lo_open=True, hi=MAX_EPSILON, items=True),
    "dchi_targets": Range(lo=0, hi=1, lo_open=True, hi_open=True, items=True), "calibration_tokens": POS_INT,
    "private": POS_INT,
    ("audit", "encodings_per_example"): Range(lo=2, integer=True, note="the attack needs >= 2 encodings per sentence"),
    "max_minutes": Range(lo=0, lo_open=True, hi=1e7), "graph": POS_INT, "distractors": NONNEG_INT,
    "nmf_repair_rounds": POS_INT, "nmf_repair_iters": Range(lo=0, integer=True, note="0 = no repair"),
    "local_clip": Range(lo=0, hi=1e12, note="0 = no local clipping"),
    "local_noise": Range(lo=0, hi=1e6, note="0 = no local noise"),
    ("federated", "dp_clip"): Range(lo=0, hi=1e12, note="0 = no DP"),
    ("federated", "dp_epsilon"): Range(lo=0, hi=MAX_EPSILON, note="0 = use --dp-noise-multiplier"),
    ("federated", "hidden"): Range(lo=1, integer=True, items=True, empty_ok=True, note="empty = d,d,d"),
}

#: string options that hold numbers (their value stays a string; the numbers are checked)
NUMERIC_STRINGS = {"hidden", "pool_sizes"}

#: shared help text for options registered without one: dest, or (command path, dest)
HELP: dict[str | tuple[str, str], str] = {
    "encode_batch_size": "examples per encoder forward pass",
    "batch_size": "examples per batch",
    "epochs": "training epochs",
    "weight_decay": "AdamW weight decay of the head",
    "split": "which split to use",
    "max_length": "max tokens per text",
    "head_lr": "learning rate of the task head",
    "mode": "frozen encoder + head, or joint fine-tuning",
    "scheme": "privacy scheme",
    "server_optimizer": "server optimizer (fedsgd)",
    "encoder_lr": "encoder learning rate in joint mode",
    "dropout": "dropout of the head",
    "pooling": "sentence representation",
    "dp_delta": "target delta",
    "quiet": "no progress bars",
    "title": "page title",
    "force": "replace existing outputs",
}

#: (command path, dest) -> (kind, default): every location a command writes, checked before it starts. kind is
#: "file", "dir", or "key" (a key file: also refused if it exists, unless the command's --force is given: losing
#: a key loses the ability to decode one's own release). An existing "file" (a result or a release; a ledger is
#: appended to, not replaced) is refused too unless ``--force`` is given, which :func:`finalize` adds to every
#: command with such an output. default, if not None, is checked when the option is not given.
OUTPUTS: dict[tuple[str, str], tuple[str, str | None]] = {
    ("train", "out"): ("dir", "runs/train"),
    ("predict", "out"): ("file", None),
    ("encode", "out"): ("file", None), ("encode", "key_out"): ("key", None),
    ("dp encode", "out"): ("file", None), ("dp encode", "key_out"): ("key", None),
    ("dp account", "out"): ("file", None), ("dp account", "ledger"): ("file", None),
    ("dp audit", "out"): ("file", None), ("audit", "out"): ("dir", "runs/audit"),
    ("sweep", "out"): ("dir", "runs/sweep"),
    ("dchi privatize", "out"): ("file", None),
    ("encode", "ledger"): ("file", None), ("dp encode", "ledger"): ("file", None), ("dchi privatize", "ledger"): ("file", None),
    ("dchi calibrate", "out"): ("file", None), ("dchi analyze", "out"): ("file", None),
    ("dchi finetune", "out"): ("dir", None), ("dchi pretrain", "out"): ("dir", None),
    ("federated", "out"): ("dir", "runs/federated"), ("federated", "app_dir"): ("dir", None),
    ("attack gradient", "out"): ("file", "runs/attacks/gradient_matching.json"),
    ("attack search", "out"): ("file", None), ("attack invert", "out"): ("file", None),
    ("attack reconstruct", "out"): ("file", None),
    ("report", "out"): ("dir", None), ("reproduce", "out"): ("dir", "results"), ("demo", "out"): ("dir", None),
}
#: options that name a folder privnlu writes into (a cache), on any command that has them
OUTPUT_DESTS_ANYWHERE = {"cache_dir": "dir"}
#: file outputs that are appended to, never replaced (no --force needed)
APPENDED = {"ledger"}
#: dest names that look like outputs; every such option must be declared in OUTPUTS (test)
OUTPUT_LIKE = {"out", "key_out", "app_dir", "ledger"}

#: (command path, old spelling) -> new spelling: options renamed so that one concept has one name in every command
#: (DP settings are --dp-*, d_chi's release form --dchi-mechanism, encodings per example --encodings-per-example and
#: --epochs only training epochs, a list of m or k --ms / --ks). The old spelling works until the next release:
#: finalize() adds it as a hidden alias of the new option, and using it prints one deprecation line on stderr.
RENAMED: dict[tuple[str, str], str] = {
    **{(c, f"--{o}"): f"--dp-{o}" for c in ("dp account", "dp encode", "dp audit")
       for o in ("epsilon", "delta", "clip", "calibration", "mechanism")},
    **{(c, "--epochs"): "--encodings-per-example"
       for c in ("encode", "dp account", "dp encode", "dp audit", "attack reconstruct")},
    ("attack reconstruct", "--calibration"): "--dp-calibration",
    ("dchi privatize", "--mechanism"): "--dchi-mechanism", ("dchi pretrain", "--mechanism"): "--dchi-mechanism",
    ("sweep", "--m"): "--ms", ("sweep", "--k"): "--ks",
    ("audit", "--attack-epochs"): "--encodings-per-example",
    **{("reproduce", f"--{o}"): f"--dp-{o}" for o in ("epsilons", "mechanisms", "calibrations")},
}
#: values of an old spelling that now belong to another option: (command path, old spelling) -> {value: (new
#: spelling, value)} (``dp audit --mechanism dchi-rep`` is now ``--dchi-mechanism rep``)
MOVED_VALUES: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    ("dp audit", "--mechanism"): {"dchi-rep": ("--dchi-mechanism", "rep"), "dchi-txt": ("--dchi-mechanism", "text")},
}


class DeprecatedAlias(argparse.Action):
    """The old spelling of a renamed option (:data:`RENAMED`): hidden from ``--help``; using it prints one line on
    stderr naming the new spelling, then stores the value exactly as the new option would."""

    def __init__(self, option_strings, dest, *, new: argparse.Action, moved: dict | None = None, **kwargs) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.moved = new, moved or {}

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        moved = isinstance(values, str) and values in self.moved
        target, value = self.moved[values] if moved else (self.new, values)
        use = target.option_strings[0] + (f" {value}" if moved else "")
        sys.stderr.write(f"privnlu: {option_string} is deprecated and will be removed in the next release; use {use}\n")
        setattr(namespace, target.dest, value)


def add_deprecated_aliases(path: tuple[str, ...], p: argparse.ArgumentParser) -> None:
    """Add the hidden old spellings of :data:`RENAMED` to the parser of command ``path``."""
    cmd = " ".join(path)
    for (c, old), new in RENAMED.items():
        if c != cmd or old in p._option_string_actions or new not in p._option_string_actions:  # a help-only stub
            continue
        action = p._option_string_actions[new]
        moved = {v: (p._option_string_actions[o], nv) for v, (o, nv) in MOVED_VALUES.get((c, old), {}).items()}
        choices = None if action.choices is None else [*action.choices, *moved]
        p.add_argument(old, action=DeprecatedAlias, new=action, moved=moved, dest=action.dest, type=action.type,
                       choices=choices, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Yield ``(command path, parser)`` for the parser and every subparser below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, path + (name,))


def range_for(path: tuple[str, ...], dest: str) -> Range | None:
    return RANGES.get((" ".join(path), dest), RANGES.get(dest))


def finalize(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Apply ranges, help text, ``allow_abbrev=False`` and a ``--quiet`` flag on every command to the whole tree
    (see the module docstring)."""
    for path, p in walk(parser):
        p.allow_abbrev = False
        if p._defaults.get("func") is not None and not any(a.dest == "quiet" for a in p._actions):
            p.add_argument("--quiet", action="store_true", help="no progress bars")  # main() silences tqdm
        if replaces_files(" ".join(path)) and not any(a.dest == "force" for a in p._actions):
            p.add_argument("--force", action="store_true", help="replace an existing output file")
        for a in p._actions:
            if not a.option_strings or isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                continue
            output = OUTPUTS.get((" ".join(path), a.dest))
            if output is not None and a.metavar is None:
                a.metavar = "DIR" if output[0] == "dir" else "FILE"
            if a.help is None:
                a.help = HELP.get((" ".join(path), a.dest), HELP.get(a.dest))
            rng = range_for(path, a.dest)
            numeric = a.type in (int, float) or getattr(a.type, "__name__", "") in NUMERIC_TYPES or (
                a.type is None and a.dest in NUMERIC_STRINGS)
            if rng is not None and numeric and not hasattr(a.type, "range"):
                a.type = rng.wrap(a.type)
                if a.help and "range:" not in a.help:
                    a.help += f"; range: {rng.text()}"
            if a.help and has_default(a) and "default" not in a.help:
                shown = ",".join(map(_fmt, a.default)) if isinstance(a.default, (list, tuple)) else _fmt(a.default)
                a.help += f" (default: {shown or 'none'})".replace("%", "%%")
        add_deprecated_aliases(path, p)
    return parser


def replaces_files(command: str) -> bool:
    """True if ``command`` writes a result file that could replace an earlier one (see :data:`OUTPUTS`)."""
    return any(c == command and kind == "file" and dest not in APPENDED for (c, dest), (kind, _) in OUTPUTS.items())


def has_default(action: argparse.Action) -> bool:
    """True if the option has a default worth stating (not None, not a flag's False)."""
    return not (action.default is None or action.default is False or action.default is argparse.SUPPRESS)


#: argparse ``type`` functions that parse numbers (their options need a range)
NUMERIC_TYPES = {"int", "float", "positive_int", "int_list", "m_list", "m_value", "eta_list"}


def _fmt(v: object) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e10:
        return str(int(v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def chosen_path(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, ...]:
    """The command path (e.g. ``("dp", "encode")``) that ``args`` were parsed for."""
    path: tuple[str, ...] = ()
    p = parser
    while True:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return path
        name = getattr(args, subs[0].dest, None)
        if name is None or name not in subs[0].choices:
            return path
        path, p = path + (name,), subs[0].choices[name]


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
    """Check every output location of the chosen command before it runs (see :data:`OUTPUTS`)."""
    path = chosen_path(parser, args)
    cmd = " ".join(path)
    files: dict[Path, str] = {}
    keys: list[str] = []
    for (c, dest), (kind, default) in OUTPUTS.items():
        if c != cmd or not hasattr(args, dest):
            continue
        value = getattr(args, dest)
        flag = "--" + dest.replace("_", "-")
        replace = kind != "file" or dest in APPENDED or bool(getattr(args, "force", False))
        if value is None:
            if default is not None:
                check_output(default, "dir" if kind == "dir" else "file", f"{flag} (default {default})", replace=replace)
            continue
        check_output(value, "file" if kind == "key" else kind, flag, replace=replace)
        if kind in ("file", "key"):
            resolved = Path(value).resolve()
            if resolved in files:
                raise PrivnluError(f"{files[resolved]} and {flag} name the same file {value}; give different files")
            files[resolved] = flag
        if kind == "key" and Path(value).exists() and not getattr(args, "force", False):
            keys.append(f"{flag} {value} exists: refusing to replace a key file (without it the release it belongs "
                        "to cannot be decoded); choose another file, or add --force")
    if keys:
        raise PrivnluError(keys[0])
    for dest, kind in OUTPUT_DESTS_ANYWHERE.items():
        value = getattr(args, dest, None)
        if value:
            check_output(value, kind, "--" + dest.replace("_", "-"))
