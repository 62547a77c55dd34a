"""Entry point: ``privnlu <command> ...``.

Each subcommand lives in its own module with a ``register(subparsers)``
function; add it to :data:`COMMANDS` (name -> module, one-line help) to add a command.
Only the chosen command's module is imported (``privnlu --help`` imports none of them);
``tests/test_cli_reliability.py`` checks that :data:`COMMANDS` matches what the modules register.
User errors print one line and exit with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings

from ..errors import PrivnluError
from .options import check_outputs, finalize

#: top-level command -> (module under privnlu.cli that registers it, its one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a model on (privatized) data"),
    "predict": ("predict", "apply a trained run to new text (with the owner's key where the scheme needs one)"),
    "encode": ("encode", "write TextHide encodings and mixed labels for a downstream party"),
    "sweep": ("sweep", "train over an m x k grid from cached features"),
    "reproduce": ("reproduce", "run a paper's experiment recipe"),
    "demo": ("demo", "every privatization scheme on packaged tweets: utility vs re-identification, with a report"),
    "report": ("report", "turn result JSONs into one HTML page with plots"),
    "tasks": ("tasks", "list the known tasks"),
    "privatize": ("privatize", "d_chi-privatize a text file (token rep, text-to-text or sequence rep)"),
    "calibrate-eta": ("dchi", "find eta for a target token-inversion accuracy on this model"),
    "dchi-analyze": ("dchi", "d_chi analyses: geometry, examples, plausible deniability, inversion"),
    "dchi-finetune": ("dchi_train", "privacy-constrained fine-tuning: null / sequence / token / text modes"),
    "dchi-pretrain": ("dchi_train", "privacy-adaptive MLM pretraining (vanilla / probability / denoising)"),
    "federated": ("federated", "federated training with TextHide on Flower (FedSGD / FedAvg)"),
    "gradient-attack": ("gradient_attack", "gradient-matching attack (DLG) on shared gradients (TextHide Table 2)"),
    "attack": ("attack", "attack instance encodings (similarity search, inversion, reconstruction)"),
    "dp": ("dp", "DP instance encoding: calibrate noise and account the whole release"),
    "audit": ("audit", "every privatization scheme on one task: utility vs sentence re-identification"),
}
COMMAND_MODULES = tuple(dict.fromkeys(module for module, _ in COMMANDS.values()))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every atomic write removes its temporary file on the way out."""


def _on_sigterm(signum, frame) -> None:  # noqa: ARG001
    raise Terminated()


def install_signal_handlers() -> None:
    """SIGTERM unwinds like SIGINT: ``privnlu.io`` removes temporary files, checkpoints stay atomic."""
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (an embedding application): leave its signals alone
        pass


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line and exit code 2, and abbreviated options are refused."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command tree, or (``command`` given) the tree with only that command's module imported and
    every other command a help-only stub: start-up then costs one module's imports, ``--help`` none."""
    parser = OneLineParser(prog="privnlu", description="Privacy-preserving NLU: TextHide, attacks, DP encoding, d_chi-privacy.")
    parser.add_argument("--version", action="version", version=f"privnlu {__import__('privnlu').__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    wanted = COMMAND_MODULES if command is None else (COMMANDS[command][0],) if command in COMMANDS else ()
    for module in wanted:
        importlib.import_module(f"{__package__}.{module}").register(sub)
    for name, (module, help_text) in COMMANDS.items():
        if module not in wanted:
            sub.add_parser(name, help=help_text, add_help=False)
    return finalize(parser)


def silence_progress_bars() -> None:
    """``--quiet``: every tqdm bar of this process is disabled unless its caller passes ``disable=`` itself (the
    commands with their own ``--quiet`` handling do, with the same meaning)."""
    from functools import partialmethod

    from tqdm import std

    std.tqdm.__init__ = partialmethod(std.tqdm.__init__, disable=True)  # type: ignore[method-assign]


class PlainLines:
    """A non-terminal stderr (a ``nohup`` log) for progress bars: every carriage-return redraw becomes its own line,
    and the blank redraws that clear a bar are dropped, so ``tail`` and ``grep`` read one line per update."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._redrawn = False  # the last write was a redraw, already ended with a newline

    def write(self, text: str) -> int:
        if "\r" in text:
            parts = [p.rstrip("\n") for p in text.split("\r") if p.strip()]
            self._stream.write("".join(p + "\n" for p in parts))
            self._redrawn = self._redrawn or bool(parts)
        elif not (text == "\n" and self._redrawn):  # a bar's closing newline: its line is already ended
            self._stream.write(text)
            self._redrawn = False
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _command_of(argv: list[str]) -> str:
    """The command named on the command line ("" for none, e.g. ``privnlu --help``)."""
    return next((a for a in argv if not a.startswith("-")), "")


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
    argv = sys.argv[1:] if argv is None else list(argv)
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
        return int(args.func(args) or 0)
    except PrivnluError as exc:
        sys.stderr.write(f"privnlu: error: {exc}\n")
        return 2
    except Terminated:
        sys.stderr.write("privnlu: terminated (SIGTERM); finished results and checkpoints are intact (rerun with --resume)\n")
        return 143
    except KeyboardInterrupt:
        sys.stderr.write("privnlu: interrupted; finished results and checkpoints are intact (rerun with --resume)\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
