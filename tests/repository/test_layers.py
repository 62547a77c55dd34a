"""privnlu's layers hold: no import cycle between modules or packages, and no import from a lower layer into a
higher one. Every import counts, at module level or inside a function or ``TYPE_CHECKING`` block.

:data:`LAYERS` is the one place the order is written down (top first). Packages of one layer may import each
other as long as no cycle forms.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "privnlu"

#: the layers, top first: a module may import its own layer and the layers below it, never one above
LAYERS: tuple[tuple[str, ...], ...] = (
    ("api",),  # privnlu/__init__.py and privnlu/api.py: one entry per role
    ("cli",),
    ("report",),
    ("audit",),
    ("experiments",),  # registered recipes, one per paper table or figure
    ("attacks",),
    ("owner",),  # the data owner's release
    ("federated", "training"),
    ("model_folder",),  # a trained model as a folder: export, card, predict
    ("schemes",),
    ("mechanisms",),
    ("accounting",),  # DP events and accountants
    ("models",),
    ("data", "paper_values"),
    ("io", "rng", "errors", "stats", "params", "options", "choices", "version", "schemas"),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in (SRC / PACKAGE).rglob("*.py")}


def unit(module: str) -> str:
    """The layer unit of a module: its package under privnlu (``privnlu.cli.train`` -> ``cli``), its own name for a
    top-level module (``privnlu.rng`` -> ``rng``); the package itself and ``privnlu.api`` are ``api``."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "api":
        return "api"
    return parts[1]


def imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """privnlu modules that ``module`` imports (``from pkg import name`` counts ``pkg.name`` where that is a module)."""
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
        for name in names:
            if name != PACKAGE and not name.startswith(PACKAGE + "."):
                continue
            while name not in known and "." in name:
                name = name.rsplit(".", 1)[0]
            if name != module:
                out.add(name)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imported(m, p, known) for m, p in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


RANK = {name: i for i, group in enumerate(LAYERS) for name in group}


def test_every_module_has_a_layer():
    assert not sorted({unit(m) for m in modules()} - set(RANK)), "add the new package or module to LAYERS"


def test_no_import_cycle_between_modules():
    assert cycles(graph()) == []


def test_no_import_cycle_between_packages():
    g: dict[str, set[str]] = defaultdict(set)
    for a, bs in graph().items():
        g[unit(a)] |= {unit(b) for b in bs if unit(b) != unit(a)}
    assert cycles(g) == []


def upward(g: dict[str, set[str]]) -> list[str]:
    """The imports of ``g`` from a lower layer into a higher one, as ``"a -> b"``."""
    return sorted(f"{a} -> {b}" for a, bs in g.items() for b in bs if RANK[unit(b)] < RANK[unit(a)])


def test_no_import_runs_upward():
    assert upward(graph()) == []


def test_the_check_finds_a_synthetic_upward_import():
    """The check can fail: an import from a lower layer into a higher one (accounting -> schemes, models ->
    attacks) is found, and the same import downward is not."""
    g = {"privnlu.accounting.events": {"privnlu.schemes.base"}, "privnlu.models.encoder": {"privnlu.attacks.registry"},
         "privnlu.schemes.base": {"privnlu.accounting.events"}}
    assert upward(g) == ["privnlu.accounting.events -> privnlu.schemes.base",
                         "privnlu.models.encoder -> privnlu.attacks.registry"]


def test_the_checks_see_imports_inside_functions_and_cycles(tmp_path):
    """The checks can fail: a cycle hidden inside functions is found."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    root = tmp_path / "src" / PACKAGE
    (root / "cli").mkdir(parents=True)
    (root / "cli" / "__init__.py").write_text("")
    (root / "cli" / "x.py").write_text("def f():\n    from ..rng import g\n    from . import y\n")
    (root / "cli" / "y.py").write_text("")
    (root / "rng.py").write_text("")
    known = {"privnlu.cli": root / "cli" / "__init__.py", "privnlu.cli.x": root / "cli" / "x.py",
             "privnlu.cli.y": root / "cli" / "y.py", "privnlu.rng": root / "rng.py"}
    assert imported("privnlu.cli.x", known["privnlu.cli.x"], known) == {"privnlu.rng", "privnlu.cli.y"}
