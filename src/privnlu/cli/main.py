"""Entry point: ``privnlu <command> ...`` and ``privnlu <group> <command> ...``.

Each subcommand lives in a module with a ``register(subparsers)`` function that adds its commands; list them in
:data:`COMMANDS` (command path -> module, one-line help) to add a command. A two-word path is a command of the group
named first (:data:`GROUPS`). Only the chosen command's module is imported (``privnlu --help`` and
``privnlu <group> --help`` import none of them), and no command module imports torch to build its parser;
``tests/cli/test_cli_reliability.py`` checks that :data:`COMMANDS` matches what the modules register. Old top-level
names (:data:`DEPRECATED`) still work for one release, with a one-line notice.
User errors print one line and exit with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from ..attacks.registry import commands as attack_commands
from ..errors import PrivnluError
from ..version import __version__
from ..io import PlainLines, Terminated, install_signal_handlers, silence_progress_bars
from .options import check_outputs, finalize

#: ``privnlu attack`` commands registered by a module other than :mod:`.attack`
ATTACK_MODULES = {"gradient": "gradient_attack"}
#: command path -> (module under privnlu.cli that registers it, its one-line help), in the order ``--help`` lists
#: them; a module's commands are adjacent and share one parent
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a model on (privatized) data"),
    "predict": ("predict", "apply a trained run to new text (with the owner's key where the scheme needs one)"),
    "release": ("release", "privatize data under any scheme before it leaves the owner (one command for every "
                           "scheme)"),
    "encode": ("encode", "write TextHide or DP encodings and mixed labels for a downstream party"),
    "sweep": ("sweep", "train over an m x k grid from cached features"),
    "audit": ("audit", "every privatization scheme on one task: utility vs leakage (advantage over chance)"),
    "federated": ("federated", "federated training with TextHide on Flower (FedSGD / FedAvg)"),
    "dchi privatize": ("privatize", "d_chi-privatize a text file (text-to-text, token-rep or sequence-rep)"),
    "dchi calibrate": ("dchi", "find eta for a target token-inversion accuracy on this model"),
    "dchi analyze": ("dchi", "d_chi analyses: geometry, examples, plausible deniability, inversion"),
    "dchi finetune": ("dchi_train", "privacy-constrained fine-tuning: none / dchi-sequence / dchi-token / dchi-text"),
    "dchi pretrain": ("dchi_train", "privacy-adaptive MLM pretraining (vanilla / probability / denoising)"),
    "dp account": ("dp", "noise for an (epsilon, delta) target, and the epsilon the release really has; with "
                         "--ledger, every recorded release of each dataset composed"),
    "dp encode": ("dp", "write DP encodings and mixed labels (key file separately, mode 0600)"),
    "dp audit": ("dp", "empirical DP audit: a 95 %% lower bound on epsilon from many draws, beside the claim"),
    "dp audit-sgd": ("dp", "one-run audit of DP-SGD: a 95 %% lower bound on epsilon from canaries in one training run, beside the claim"),
    "ledger": ("ledger", "list a privacy ledger's releases (pending ones marked); settle a pending one"),
    # the attack registry's commands (privnlu.attacks.registry), each with its summary
    **{f"attack {c}": (ATTACK_MODULES.get(c, "attack"), e.summary) for c, e in attack_commands().items()},
    "reproduce": ("reproduce", "run a paper's experiment recipe"),
    "demo": ("demo", "every privatization scheme on packaged tweets: utility vs re-identification, with a report"),
    "report": ("report", "turn result JSONs into one HTML page with plots"),
    "tasks": ("tasks", "list the known tasks and where their data was looked for"),
}
#: ``privnlu release`` and the older commands it stands for (:mod:`.release`)
RELEASES = ("release", "encode", "dp encode", "dchi privatize")
#: group -> (its one-line help, its description)
GROUPS: dict[str, tuple[str, str]] = {
    "dchi": ("d_chi-privacy (Qu et al. 2021): privatize text, calibrate eta, analyses, private fine-tuning and "
             "pretraining", "d_chi-privacy over the encoder's token-embedding space (Qu et al. 2021): the user "
             "privatizes text or token representations before they leave the device."),
    "dp": ("DP instance encoding: calibrate noise, encode, account the whole release, audit a claim; audit DP-SGD",
           "Differentially private instance encoding: clip, mix as TextHide, add calibrated noise. The guarantee is "
           "per example over every encoding it takes part in (k per encoding round). `dp audit-sgd` audits a DP-SGD "
           "training run empirically (Steinke et al. 2023)."),
    "attack": ("attack encodings and shared gradients (similarity search, inversion, reconstruction, gradient "
               "matching)", "Audit an encoding scheme with an attack whose threat model is stated in the output."),
}
#: old top-level name -> its command path now; accepted for one release with a one-line notice
DEPRECATED: dict[str, str] = {
    "privatize": "dchi privatize", "calibrate-eta": "dchi calibrate", "dchi-analyze": "dchi analyze",
    "dchi-finetune": "dchi finetune", "dchi-pretrain": "dchi pretrain", "gradient-attack": "attack gradient",
}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line and exit code 2, and abbreviated options are refused."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command tree, or (``command`` given: a path such as ``"dchi privatize"``) the tree with only that
    command's module imported and every other command a help-only stub: start-up then costs one module's imports,
    ``--help`` none."""
    epilog = "deprecated names, accepted until the next release: " + ", ".join(
        f"{old} (now {new})" for old, new in DEPRECATED.items())
    parser = OneLineParser(prog="privnlu", epilog=epilog,
                           description="Privacy-preserving NLU: TextHide, attacks, DP encoding, d_chi-privacy.")
    parser.add_argument("--version", action="version", version=f"privnlu {__version__}")
    subs = {"": parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)}
    subs[""].required = True
    chosen = COMMANDS[command][0] if command in COMMANDS else None
    registered: set[str] = set()
    for path, (module, help_text) in COMMANDS.items():
        parent, _, name = path.rpartition(" ")
        if parent not in subs:
            group_help, description = GROUPS[parent]
            group = subs[""].add_parser(parent, help=group_help, description=description)
            subs[parent] = group.add_subparsers(dest=f"{parent}_command", metavar="COMMAND", parser_class=OneLineParser)
            subs[parent].required = True
        if command is None or module == chosen:
            if module not in registered:
                importlib.import_module(f"{__package__}.{module}").register(subs[parent])
                registered.add(module)
        else:
            subs[parent].add_parser(name, help=help_text, add_help=False)
    return finalize(parser)


def _command_of(argv: list[str]) -> str:
    """The command path named on the command line (``"train"``, ``"dchi privatize"``; ``"dchi"`` or ``""`` when
    only a group or nothing is named, e.g. ``privnlu --help``)."""
    words = [a for a in argv if not a.startswith("-")]
    return " ".join(words[:2]) if words and words[0] in GROUPS else " ".join(words[:1])


def undeprecate(argv: list[str]) -> list[str]:
    """``argv`` with an old top-level name (:data:`DEPRECATED`) replaced by its command path, after one notice."""
    i = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if i is None or argv[i] not in DEPRECATED:
        return argv
    new = DEPRECATED[argv[i]]
    sys.stderr.write(f"privnlu: '{argv[i]}' is deprecated and will be removed in the next release; use "
                     f"'privnlu {new}'\n")
    return argv[:i] + new.split() + argv[i + 1:]


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*privnlu: a fixed --seed.*")
    if sys.stderr.isatty():
        return _main(argv)
    # logs: a progress line every 60 s, not one per update (tqdm reads TQDM_* defaults), each on its own line
    os.environ.setdefault("TQDM_MININTERVAL", "60")
    stderr, sys.stderr = sys.stderr, PlainLines(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stderr = stderr


def _main(argv: list[str] | None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    argv = undeprecate(given)
    command = _command_of(argv)
    if command in RELEASES:  # the data owner's release, or one of its older names
        from . import release

        if command != "release" and argv == given:  # one notice: a deprecated name has had its own
            sys.stderr.write(release.alias_notice(command))
        try:
            argv = release.rewrite(argv)  # privnlu release --scheme X: the command that writes X's release
        except PrivnluError as exc:
            sys.stderr.write(f"privnlu: error: {exc}\n")
            return 2
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, already printed), or --help / --version
        return exc.code if isinstance(exc.code, int) else 0
    try:
        check_outputs(parser, args)  # every output location, before any work starts
        if getattr(args, "quiet", False):
            silence_progress_bars()
        install_signal_handlers()
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at the interpreter's exit
        return code
    except PrivnluError as exc:
        sys.stderr.write(f"privnlu: error: {exc}\n")
        return 2
    except Terminated:
        sys.stderr.write("privnlu: terminated (SIGTERM); finished results and checkpoints are intact (rerun with --resume)\n")
        return 143
    except KeyboardInterrupt:
        sys.stderr.write("privnlu: interrupted; finished results and checkpoints are intact (rerun with --resume)\n")
        return 130
    except BrokenPipeError:  # the reader closed standard output (`privnlu report ... | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the interpreter's final flush does not raise again
        return 141


if __name__ == "__main__":
    raise SystemExit(main())
