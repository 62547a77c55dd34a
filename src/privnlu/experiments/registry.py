"""The recipe registry: one registered recipe per paper artefact (a table or a figure), or per experiment that
extends a paper's method, filed under that paper.

A :class:`Recipe` names the paper and artefact it reproduces, takes options (``defaults``: option -> default, in
the canonical order of its command line), and splits its work into independent :class:`Point` s, one output
record each, with a stable file name. ``privnlu reproduce`` runs the points a folder does not hold yet: a point's
record already there is read back when the settings it was made with (``Recipe.settings_of``) equal the
point's (``Point.settings``), and refused otherwise. Records never carry a path of the machine that made them
(:func:`public_record`).

This module imports no torch: listing recipes, planning points and a dry run stay fast.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import PrivnluError

#: the paper modules that register recipes (imported by :func:`load`)
PAPERS = ("huang2020", "huang2020_attacks", "xie2021", "xie2022", "xie2022_dp_sgd", "qu2021", "qu2021_training", "qu2021_gpu",
          "huang2020_sentence_recovery", "huang2020_client_dp",
          "huang2020_sentence_recovery_secagg", "huang2020_inference", "huang2020_sentence_recovery_client_dp")
#: the folder every recipe files its results under, by paper
RESULTS = Path("results")


@dataclass(frozen=True)
class Point:
    """One independent unit of a recipe's work: one record ``<name>.json``. ``after``: points of the same recipe
    whose output this one reads (run first)."""

    name: str
    settings: dict
    after: tuple[str, ...] = ()


@dataclass
class RunContext:
    """What a point's run gets besides the options: its folder, a hidden scratch path for the engine's partial
    output (checkpoints, finished candidates), and the machine's data, cache and device (not settings)."""

    out: Path
    scratch: Path
    progress: bool = True
    data_dir: str | None = None
    cache_dir: str | None = None
    device: str = "cpu"


@dataclass(frozen=True)
class Recipe:
    name: str
    paper: str
    artefact: str
    title: str
    defaults: dict[str, Any]
    points: Callable[[dict], list[Point]]
    run: Callable[[dict, Point, RunContext], dict]
    settings_of: Callable[[dict], dict]
    variant: Callable[[dict], str] = field(default=lambda opts: "")
    check: Callable[[dict], None] = field(default=lambda opts: None)
    warm: Callable[[dict, RunContext], None] = field(default=lambda opts, ctx: None)

    def folder(self, opts: dict) -> Path:
        """``results/<paper>/<artefact>[-<variant>]``."""
        v = self.variant(opts)
        return RESULTS / self.paper / (self.artefact + (f"-{v}" if v else ""))


RECIPES: dict[str, Recipe] = {}
#: old recipe names, accepted for one release: old -> new
ALIASES: dict[str, str] = {}


def register(recipe: Recipe) -> Recipe:
    if recipe.name in RECIPES:
        raise ValueError(f"recipe {recipe.name} registered twice")
    RECIPES[recipe.name] = recipe
    return recipe


def load() -> dict[str, Recipe]:
    """Every registered recipe (the paper modules register theirs on import)."""
    for name in PAPERS:
        importlib.import_module(f"{__package__}.{name}")
    return RECIPES


def get(name: str) -> Recipe:
    recipes = load()
    if name not in recipes:
        raise PrivnluError(f"unknown recipe '{name}'; `privnlu reproduce --list` lists them")
    return recipes[name]


def options(recipe: Recipe, given: dict) -> dict:
    """The recipe's options: its defaults, overridden by the given values (None: not given)."""
    return {k: (given[k] if given.get(k) is not None else v) for k, v in recipe.defaults.items()}


# -- what a record may carry ----------------------------------------------------------------------------------

def public_record(obj: Any, *, root: Path | None = None) -> Any:
    """``obj`` with nothing of this machine: the packaged model's folder becomes its public name, a path under the
    working folder becomes relative, and any other absolute path its last component."""
    from ..models.encoder import PACKAGED_MODEL_NAME

    return _scrub(obj, _packaged_dirs(), PACKAGED_MODEL_NAME, str(root or Path.cwd()))


def _packaged_dirs() -> set[str]:
    try:
        from ..models.encoder import default_model_path

        path = default_model_path()
    except (PrivnluError, ImportError):
        return set()
    return {str(path), str(path.resolve())}


def _scrub(obj: Any, packaged: set[str], public: str, root: str) -> Any:
    if isinstance(obj, dict):
        return {k: _scrub(v, packaged, public, root) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_scrub(v, packaged, public, root) for v in obj]
    if isinstance(obj, str) and obj.startswith("/") and "/" in obj[1:] and not any(c.isspace() for c in obj):
        if obj.rstrip("/") in packaged:
            return public
        if obj.startswith(root.rstrip("/") + "/"):
            return os.path.relpath(obj, root)
        return Path(obj).name
    return obj


def absolute_paths(obj: Any) -> list[str]:
    """The strings of ``obj`` that look like absolute paths (what :func:`public_record` removes)."""
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in absolute_paths(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in absolute_paths(v)]
    if isinstance(obj, str) and obj.startswith("/") and "/" in obj[1:] and not any(c.isspace() for c in obj):
        return [obj]
    return []


# -- comparing settings ---------------------------------------------------------------------------------------

def normal(obj: Any) -> Any:
    """``obj`` as JSON stores it (tuples as lists, ints and floats as JSON reads them back)."""
    return json.loads(json.dumps(obj, default=str))


def settings_diff(old: dict, new: dict) -> list[str]:
    """``"key old -> new"`` for every flattened setting that differs (empty: the same settings)."""
    a, b = _flat(normal(old)), _flat(normal(new))
    return [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _flat(d: Any, prefix: str = "") -> dict:
    if not isinstance(d, dict):
        return {prefix.rstrip("."): d}
    out: dict = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def pick(d: dict, *keys: str) -> dict:
    """The given keys of ``d`` (None where absent)."""
    return {k: d.get(k) for k in keys}
