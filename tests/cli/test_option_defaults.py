"""One default per option: every parser of the command tree, walked, states the same default for an option in
every command that has it (deliberate exceptions listed below, each with its reason), and every stated default is
inside the option's declared range; so are the defaults of the settings dataclasses that declare their fields
with the option registry."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from collections import defaultdict

import pytest

from privnlu.cli.main import build_parser
from privnlu.cli.options import walk
from privnlu.options import OPTIONS

#: (flag, command) -> why that command's default differs from the rest
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("--batch-size", "dchi finetune"): "fine-tunes a whole transformer per batch, not a head on cached features",
    ("--batch-size", "dchi pretrain"): "MLM pretraining of a transformer: a smaller batch per step",
    ("--checkpoint-every", "dchi pretrain"): "counts optimizer steps; federated counts rounds (0 = the end only)",
    ("--conditions", "attack reconstruct"): "the reconstruction attack needs M:K releases, not mix-only or random",
    ("--dp-clip", "federated"): "client-level DP on the server: 0 = off (a Flower run config carries scalars only)",
    ("--dp-epsilon", "federated"): "0 = use --dp-noise-multiplier (a Flower run config carries scalars only)",
    ("--dp-epsilon", "dp audit-sgd"): "the claim audited; the other commands have no claim until one is given",
    ("--draws", "dchi pretrain"): "noise draws per pretraining example, not draws per token of an analysis",
    ("--encodings-per-example", "attack reconstruct"): "the attack clusters a release of 50 encodings per example "
                                                       "(Xie & Hong 2021); a release is written once by default",
    ("--epochs", "dchi finetune"): "fine-tunes a transformer: 3 epochs (Qu et al. 2021)",
    ("--epochs", "dp audit-sgd"): "one audited DP-SGD run, kept short",
    ("--etas", "dchi finetune"): "the eta of the paper's fine-tuning tables, not the analyses' grid",
    ("--hidden", "dp audit-sgd"): "the audited head: one hidden layer of 128",
    ("--hidden", "attack invert"): "the attacker's inversion MLP (TextHide appendix C.3), not a task head",
    ("--ks", "attack gradient"): "k = 0 is the no-TextHide baseline of Table 2; the sweep's grid is Figure 2's",
    ("--lr", "dchi pretrain"): "a transformer's MLM learning rate, not a head's",
    ("--lr", "dp audit-sgd"): "DP-SGD's noisy steps need a larger rate than AdamW on a clean head",
    ("--max-length", "dchi pretrain"): "MLM pretraining on short sequences (the paper's CPU-scale setting)",
    ("--pairs", "attack reconstruct"): "pairs of simulated encodings that train the pair network; dp audit's are "
                                       "token pairs audited",
    ("--queries", "attack invert"): "the paper's query counts differ per attack (TextHide 4.4 and C.3)",
    ("--queries", "attack reconstruct"): "the reconstruction attack's 100 private originals (Xie & Hong 2021)",
    ("--scheme", "encode"): "a release for another party is private by default: texthide",
    ("--scheme", "federated"): "federated TextHide: the clients' scheme",
    ("--scheme", "dchi privatize"): "the d_chi group's text-to-text mechanism",
    ("--scheme", "dchi pretrain"): "the d_chi group's text-to-text mechanism",
    ("--scheme", "dp audit"): "the claim audited: DP instance encoding",
    ("--seed", "attack gradient"): "a paper experiment: the trial choice and victim keys are reproducible by default",
    ("--split", "dchi calibrate"): "calibrates on a task's dev tokens (held out), as the paper's Table 3",
    ("--task", "dchi analyze"): "the inversion analysis attacks SST-2's dev tokens (Table 3)",
    ("--task", "attack gradient"): "Table 2 attacks SST-2's cached train representations",
    ("--task", "demo"): "the demo runs on the packaged tweets corpus, offline",
    ("--train-limit", "dp audit-sgd"): "one audited DP-SGD run on 2000 examples, kept short",
}
#: options whose default is the command's own by nature
PER_COMMAND = {"--out": "a file in some commands, a folder in others, each command's own place"}
#: commands whose unset options take another table's defaults
DEFERRED = {"reproduce": "a recipe option left out takes the recipe's own default (privnlu reproduce --list)"}


def _commands():
    for path, p in walk(build_parser()):
        if p._defaults.get("func") is not None:
            yield " ".join(path), p


def _options(p: argparse.ArgumentParser):
    for a in p._actions:
        if a.option_strings and a.default is not argparse.SUPPRESS and not isinstance(a, argparse._HelpAction):
            yield a


def _same(value) -> object:
    """A default as a comparable value (a list option may state its default as text or as a list)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return value


def test_each_option_has_one_default_across_commands():
    seen: dict[str, dict[str, object]] = defaultdict(dict)
    for cmd, p in _commands():
        if cmd in DEFERRED:
            continue
        for a in _options(p):
            if a.default is not None and a.option_strings[0] not in PER_COMMAND:
                seen[a.option_strings[0]][cmd] = _same(a.default)
    conflicts = []
    for flag, by_cmd in seen.items():
        plain = {c: v for c, v in by_cmd.items() if (flag, c) not in EXCEPTIONS}
        if len(set(map(repr, plain.values()))) > 1:
            conflicts.append(f"{flag}: {plain}")
    assert not conflicts, "\n".join(conflicts)
    has = {(a.option_strings[0], cmd) for cmd, p in _commands() for a in _options(p)}
    stale = [k for k in EXCEPTIONS if k not in has]
    assert not stale, f"exceptions for options a command no longer has: {stale}"


def test_catalogue_options_keep_the_catalogue_default_unless_excepted():
    """An option of the catalogue states the catalogue's default wherever it has a stated one."""
    by_flag = {o.flags[0]: o for o in OPTIONS.values()}
    wrong = []
    for cmd, p in _commands():
        if cmd in DEFERRED:
            continue
        for a in _options(p):
            o = by_flag.get(a.option_strings[0])
            if (o is None or o.default is None or a.default is None or a.option_strings[0] in PER_COMMAND
                    or (a.option_strings[0], cmd) in EXCEPTIONS or a.dest != o.dest):
                continue
            if _same(a.default) != _same(o.default):
                wrong.append(f"{cmd} {a.option_strings[0]}: {a.default!r}, catalogue {o.default!r}")
    assert not wrong, "\n".join(wrong)


def test_pooling_defaults_to_the_catalogue_everywhere():
    pooling = {cmd: a.default for cmd, p in _commands() if cmd not in DEFERRED for a in _options(p)
               if a.dest == "pooling"}
    assert {"train", "dchi privatize", "attack reconstruct", "attack search", "federated"} <= set(pooling)
    assert set(pooling.values()) == {OPTIONS["pooling"].default}


def _in_range(a: argparse.Action) -> bool:
    rng = getattr(a.type, "range", None)
    if rng is None or a.default in (None, False, argparse.SUPPRESS):
        return True
    if isinstance(a.default, str):
        try:
            a.type(a.default)
        except (argparse.ArgumentTypeError, ValueError):
            return False
        return True
    values = a.default if isinstance(a.default, (list, tuple)) else [a.default]
    try:
        for v in values:
            rng.check(float(v))
    except ValueError:
        return False
    return True


def test_every_default_is_inside_its_declared_range():
    bad = [f"{cmd} {a.option_strings[0] if a.option_strings else a.dest} = {a.default!r}"
           for cmd, p in _commands() for a in p._actions if not _in_range(a)]
    assert not bad, "\n".join(bad)


#: (settings class, field) -> why the library's default lies outside the option's range
LIBRARY_EXCEPTIONS = {
    ("FederatedConfig", "train_limit"): "0 = all: a Flower run config carries scalars only (the command line's "
                                        "default is none)",
    ("FederatedConfig", "dev_limit"): "0 = all, as train_limit",
}


@pytest.mark.parametrize("module, name", [("privnlu.federated.config", "FederatedConfig"),
                                          ("privnlu.training.settings", None), ("privnlu.audit.grid", None),
                                          *[(f"privnlu.schemes.{m}", None) for m in ("texthide", "dchi", "dp_ie", "dp_sgd")]])
def test_settings_defaults_are_inside_their_declared_ranges(module, name):
    mod = importlib.import_module(module)
    classes = [getattr(mod, name)] if name else [c for c in vars(mod).values()
                                                 if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == module]
    bad, checked = [], 0
    for cls in classes:
        for f in dataclasses.fields(cls):
            opt = f.metadata.get("option")
            if opt is None or opt.range is None or f.default in (dataclasses.MISSING, None, False):
                continue
            if (cls.__name__, f.name) in LIBRARY_EXCEPTIONS:
                continue
            checked += 1
            values = f.default if isinstance(f.default, (list, tuple)) else [f.default]
            try:
                for v in values:
                    opt.range.wrap(opt.parse)(v) if isinstance(v, str) else opt.range.check(float(v))
            except (ValueError, TypeError, argparse.ArgumentTypeError):
                bad.append(f"{cls.__name__}.{f.name} = {f.default!r}: {opt.range.text()}")
    assert not bad, "\n".join(bad)
