"""``privnlu release --scheme X``: the data owner's one release command, for every scheme that releases data.

A scheme's kind says what its release is: per-batch encodings of a task's split (an
:class:`~privnlu.schemes.EncodingScheme`, and ``none`` for the clean representations in the same format) are written
as ``privnlu encode`` writes them; a text file privatized once on the user's side (a
:class:`~privnlu.schemes.ReleasedOnceScheme`) as ``privnlu dchi privatize`` writes it. A scheme that releases only a
trained model (a :class:`~privnlu.schemes.ModelScheme`, DP-SGD) is refused with the command that trains it.

The command line is rewritten before it is parsed (:func:`rewrite`), so ``privnlu release --scheme X --help`` shows
the options of X's release. The older commands (``encode``, ``dp encode``, ``dchi privatize``) stay as aliases for one
release, with a one-line notice (:data:`ALIASES`).
"""

from __future__ import annotations

import argparse

from ..errors import PrivnluError

#: the older command paths that release data -> the ``--scheme`` of ``privnlu release`` that does the same
ALIASES: dict[str, str] = {"encode": "texthide", "dp encode": "dp-ie", "dchi privatize": "dchi-text"}


def release_path(name: str) -> str:
    """The command that writes a release of scheme ``name`` (PrivnluError for a scheme that releases no data)."""
    from ..schemes import EncodingScheme, NoPrivacy, ReleasedOnceScheme, get

    cls = get(name)
    if issubclass(cls, (EncodingScheme, NoPrivacy)):
        return "encode"
    if issubclass(cls, ReleasedOnceScheme):
        return "dchi privatize"
    raise PrivnluError(f"scheme {cls.name} releases no data, only a model trained under it: "
                       f"privnlu train --scheme {cls.name} (or privnlu federated)")


def _scheme_of(argv: list[str]) -> tuple[int, str] | None:
    """Where ``--scheme`` is given in ``argv`` and its value (``--scheme X`` or ``--scheme=X``)."""
    for i, a in enumerate(argv):
        if a == "--scheme" and i + 1 < len(argv):
            return i, argv[i + 1]
        if a.startswith("--scheme="):
            return i, a.split("=", 1)[1]
    return None


def rewrite(argv: list[str]) -> list[str]:
    """``argv`` of ``privnlu release --scheme X ...`` as the command that writes X's release; any other ``argv``
    (and ``release`` without ``--scheme``, which its own parser then refuses or explains) unchanged."""
    i = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if i is None or argv[i] != "release":
        return argv
    found = _scheme_of(argv[i + 1:])
    if found is None:
        return argv
    return argv[:i] + release_path(found[1]).split() + argv[i + 1:]


def alias_notice(path: str) -> str:
    """The one-line notice an older release command prints."""
    return (f"privnlu: note: 'privnlu {path}' is now 'privnlu release --scheme {ALIASES[path]}' (same options); the "
            f"old name stays for one release\n")


def register(sub: argparse._SubParsersAction) -> None:
    from ..schemes import SCHEMES

    forms = "; ".join(f"{name}: {_form(name)}" for name in SCHEMES)
    p = sub.add_parser("release", help="privatize data under any scheme before it leaves the owner (one command for "
                                       "every scheme)",
                       description="Write the data owner's release under --scheme, with that scheme's options "
                                   "(privnlu release --scheme X --help lists them). " + forms + ".")
    p.add_argument("--scheme", required=True, help="the privacy scheme of the release")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _form(name: str) -> str:
    try:
        path = release_path(name)
    except PrivnluError:
        return "a trained model only (privnlu train)"
    return "a task split's encodings and a key file" if path == "encode" else "a text file privatized line by line"


def run(args: argparse.Namespace) -> int:
    """Not reached from the command line, where :func:`rewrite` replaces ``release`` before parsing (an unknown
    scheme is refused there); a caller that parses ``release`` itself gets the same refusal."""
    raise PrivnluError(f"unknown scheme {args.scheme!r}")
