"""The attack registry (privnlu.attacks.registry): every attack is an ``Attack`` subclass under one name, and the
schemes' threat models, ``privnlu.attack``, the audit and the command line all read that one registry. The attack
families are sub-packages of ``privnlu.attacks`` with no import cycle between them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from privnlu.attacks import registry
from privnlu.attacks.threat import Attack, Capabilities, Grant
from privnlu.errors import PrivnluError

ATTACKS_DIR = Path(__file__).resolve().parents[3] / "src" / "privnlu" / "attacks"
#: the shared modules at the top of privnlu.attacks; every attack lives in a family sub-package
SHARED = {"__init__", "threat", "conditions", "registry", "runs", "owner_score", "payload_space"}


def test_every_registered_name_resolves_to_an_attack_subclass_of_its_family():
    assert registry.names()
    for name, entry in registry.ATTACKS.items():
        cls = entry.load()
        assert isinstance(cls, type) and issubclass(cls, Attack) and cls is not Attack, name
        assert cls.__module__.startswith(f"privnlu.attacks.{entry.family}."), (name, cls.__module__)
        assert entry.requires and all(isinstance(g, Grant) for g in entry.requires), name
        assert entry.summary, name
        threat = entry.threat()
        if threat is not None:  # the capabilities it is run under grant everything the attack needs
            assert isinstance(threat, Capabilities), name
            assert entry.requires <= threat.grants, (name, entry.requires - threat.grants)


def test_an_unknown_name_is_refused_with_the_registered_ones():
    with pytest.raises(PrivnluError, match="unknown attack 'nope'; registered: search"):
        registry.get("nope")


def test_every_scheme_threat_attack_name_is_registered():
    from privnlu import schemes

    for name in schemes.names():
        for attack in schemes.get(name).threat.attacks:
            assert attack in registry.ATTACKS, (name, attack)


def test_the_api_takes_the_registry_kinds_and_runs_the_registered_runner(monkeypatch):
    import privnlu
    from privnlu.attacks import runs

    assert registry.api_kinds() == ("search", "invert", "reconstruct")
    assert registry.payload_kinds() == ("search", "reconstruct")
    with pytest.raises(PrivnluError, match="unknown attack 'gradient'; choose search, invert or reconstruct"):
        privnlu.attack("gradient", task="sst2")
    with pytest.raises(PrivnluError, match="a shared file takes the search or reconstruct attack, not invert"):
        privnlu.attack("invert", payload="enc.safetensors")
    seen = []
    for kind, entry in registry.commands().items():
        if entry.on_task:
            runner = entry.on_task.partition(":")[2]
            monkeypatch.setattr(runs, runner, lambda t, c, *, seed=None, _k=kind, **kw: seen.append(_k) or {"k": _k})
    for kind in registry.api_kinds():
        assert privnlu.attack(kind, task="sst2", conditions="baseline") == {"k": kind}
    assert seen == list(registry.api_kinds())


def test_the_audit_runs_the_registry_audit_attacks():
    from privnlu.audit.run import ATTACKS

    assert set(ATTACKS) == set(registry.audit_names())
    for name in registry.audit_names():
        assert callable(ATTACKS[name])
    with pytest.raises(PrivnluError, match="unknown attack 'nope'"):
        ATTACKS["nope"]
    with pytest.raises(PrivnluError, match="the audit runs no attack 'membership' on a release"):
        ATTACKS["membership"]


def _subcommands(parser) -> dict:
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_the_command_line_attack_commands_and_wire_methods_are_the_registry():
    from privnlu.cli import main

    assert [p.split()[1] for p in main.COMMANDS if p.startswith("attack ")] == list(registry.commands())
    for command, entry in registry.commands().items():
        assert main.COMMANDS[f"attack {command}"][1] == entry.summary
    attack = _subcommands(main.build_parser())["attack"]
    assert list(_subcommands(attack)) == list(registry.commands())
    gradient = _subcommands(attack)["gradient"]
    method = next(a for a in gradient._actions if a.dest == "method")
    assert tuple(method.choices) == tuple(registry.wire_methods())


def test_reading_the_registry_imports_no_torch():
    code = "import sys, privnlu.attacks.registry as r; r.commands(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_families_are_sub_packages_and_only_shared_modules_stay_flat():
    for family in registry.FAMILIES:
        assert (ATTACKS_DIR / family / "__init__.py").is_file(), family
    flat = {p.stem for p in ATTACKS_DIR.glob("*.py")}
    assert flat == SHARED, flat ^ SHARED
    packages = {p.name for p in ATTACKS_DIR.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(registry.FAMILIES)


def test_no_import_cycle_between_the_attack_families():
    from test_layers import graph

    def part(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "attacks" else None

    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        a = part(module)
        if a is None:
            continue
        for target in targets:
            b = part(target)
            if b is not None and b != a:
                edges.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in edges.get(node, ()):
            assert state.get(nxt) != 1, f"import cycle in privnlu.attacks: {' -> '.join(path + [node, nxt])}"
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for node in list(edges):
        if node not in state:
            visit(node, [])
