"""Entry point: ``privnlu <command> ...``.

Each subcommand lives in its own module with a ``register(subparsers)``
function; add a module name to :data:`COMMAND_MODULES` to add a command.
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

COMMAND_MODULES = ("train", "encode", "sweep", "reproduce", "demo", "report", "tasks", "privatize", "dchi", "dchi_train", "federated", "gradient_attack", "attack", "dp", "audit")


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


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="privnlu", description="Privacy-preserving NLU: TextHide, attacks, DP encoding, d_chi-privacy.")
    parser.add_argument("--version", action="version", version=f"privnlu {__import__('privnlu').__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.{name}").register(sub)
    return finalize(parser)


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*privnlu: a fixed --seed.*")
    if not sys.stderr.isatty():  # logs: a progress line every 60 s, not one per update (tqdm reads TQDM_* defaults)
        os.environ.setdefault("TQDM_MININTERVAL", "60")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, already printed), or --help / --version
        return exc.code if isinstance(exc.code, int) else 0
    try:
        check_outputs(parser, args)  # every output location, before any work starts
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
