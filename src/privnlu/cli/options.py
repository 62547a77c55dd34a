"""The command line's use of the option catalogue (:data:`privnlu.options.OPTIONS`, every option defined once).

A command names the options it takes (:func:`add`, with per-command overrides of a default or help where a
command means something narrower); the privacy schemes' parameters come from the registry
(:func:`privnlu.schemes.options`). An option's ``writes`` says what kind of location it names: ``check_outputs``
checks every one of the chosen command before any work starts. Renamed options keep their old spelling for one
release (:data:`RENAMED`), as a hidden alias that prints one deprecation line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import PrivnluError
from ..io import check_writable
from ..options import OPTIONS
from ..params import Option



def option(name: str, **changes: Any) -> Option:
    """The catalogue's option ``name``, with per-command ``changes``."""
    return OPTIONS[name].but(**changes) if changes else OPTIONS[name]


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
                check_writable(default, "dir" if kind == "dir" else "file", f"{flag} (default {default})",
                             replace=kind != "file" or force)
            continue
        if kind == "key" and Path(value).exists() and not force:
            raise PrivnluError(f"{flag} {value} exists: refusing to replace a key file (without it the release it "
                               "belongs to cannot be decoded); choose another file, or add --force")
        check_writable(value, "dir" if kind == "dir" else "file", flag, replace=kind in ("dir", "ledger", "key") or force)
        if kind != "dir":
            resolved = Path(value).resolve()
            if resolved in files:
                raise PrivnluError(f"{files[resolved]} and {flag} name the same file {value}; give different files")
            files[resolved] = flag
