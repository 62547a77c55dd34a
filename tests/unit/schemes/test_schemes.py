"""The scheme registry (privnlu.schemes): one canonical name per scheme, declared parameters, old names for one
release, records of every format read back, and no other module comparing scheme names."""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from privnlu import schemes
from privnlu.errors import PrivnluError
from privnlu.audit.run import ATTACKS
from privnlu.schemes import registry

SRC = Path(__file__).resolve().parents[3] / "src" / "privnlu"
CANONICAL = ("none", "texthide", "texthide-inter", "dp-ie", "dchi-text", "dchi-token", "dchi-sequence", "dp-sgd")


def test_the_registry_holds_one_canonical_name_per_scheme():
    assert schemes.names() == CANONICAL
    for name in CANONICAL:
        cls = schemes.get(name)
        assert cls.name == name and cls.title and cls.threat.attacks and cls.threat.audit_attack
        assert cls.level in schemes.base.LEVELS and cls.formal in schemes.base.GUARANTEES
        # a scheme that releases data is attacked on it by one of the audit's attacks; one that releases only
        # the model (DP-SGD) by membership inference, which the audit runs on every point's model
        first = cls.threat.attacks[0]
        assert first == "membership" if cls.release == "model" else first in ATTACKS


def test_every_parameter_is_declared_with_help_and_a_range_or_choices():
    for name in CANONICAL:
        for o in schemes.get(name).options():
            assert o.help and o.flag.startswith("--"), (name, o.dest)
            assert o.kind == "flag" or o.range is not None or o.choices is not None, (name, o.dest)
    flags = [o.flags[0] for o in schemes.options()]
    assert len(flags) == len(set(flags))  # --m, --k once, whatever the number of schemes that take them
    m = next(o for o in schemes.options() if o.dest == "m")
    assert m.default is None and "256 with texthide" in m.help and "0 with dp-ie" in m.help


def test_defaults_agree_wherever_a_scheme_is_built():
    """DP instance encoding is the paper's Algorithm 1 (no sign mask) in every command: one default, m = 0."""
    assert schemes.create("dp-ie").m == 0 and schemes.create("texthide").m == 256
    assert schemes.create("texthide").k == schemes.create("dp-ie").k == 4


@pytest.mark.parametrize("params,match", [
    (dict(name="texthide", k=0), "k must be an integer >= 1"),
    (dict(name="texthide", m=-1), "m must be"),
    (dict(name="texthide-inter", k=1), "needs k >= 2"),
    (dict(name="dp-ie", epsilon=-1.0), "epsilon must be > 0"),
    (dict(name="dp-ie", calibration="sloppy"), "unknown calibration"),
    (dict(name="dchi-text", eta=0.0), "out of range"),
    (dict(name="none", m=4), "takes no m"),
    (dict(name="rot13"), "unknown scheme"),
])
def test_validate_refuses_bad_parameters_with_one_line(params, match):
    with pytest.raises(PrivnluError, match=match):
        schemes.create(**params)


def test_old_names_resolve_with_one_deprecation_line_each(capsys, monkeypatch):
    monkeypatch.setattr(registry, "_warned", set())
    for old, new in (("dp", "dp-ie"), ("texthide-intra", "texthide"), ("rep", "dchi-token"), ("token", "dchi-token"),
                     ("text", "dchi-text"), ("sequence", "dchi-sequence"), ("null", "none")):
        assert schemes.get(old).name == new
        assert schemes.get(old).name == new  # twice: still one line
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 7 and all("deprecated" in line and "next release" in line for line in lines)
    assert schemes.canonical("dp-ie") == "dp-ie" and capsys.readouterr().err == ""


def test_labels_and_variants_keep_the_names_results_are_filed_under():
    assert schemes.NoPrivacy().label == "baseline"
    assert schemes.create("texthide", m=256, k=4).label == "texthide-intra-m256-k4"
    assert schemes.create("texthide-inter", m="inf", k=2).label == "texthide-inter-minf-k2"
    dp = schemes.create("dp-ie", epsilon=8, clean_queries=True)
    assert dp.label == "dp-texthide-intra-m0-k4-gaussian-eps8-correct-cleanq" and dp.variant == "dp-texthide-intra"
    assert schemes.create("dchi-token", eta=100).label == "dchi-token-eta100"


@pytest.mark.parametrize("record,name,label", [
    ({"scheme": "none", "m": "0", "k": 1, "inter": False}, "none", "baseline"),
    ({"scheme": "texthide", "m": "256", "k": 4, "inter": True}, "texthide-inter", "texthide-inter-m256-k4"),
    ({"scheme": "dp", "m": "0", "k": 4, "inter": False,
      "dp": {"mechanism": "laplace", "target_epsilon": 20, "delta": 1e-5, "clip": 1.0, "calibration": "correct",
             "noisy_queries": False}}, "dp-ie", "dp-texthide-intra-m0-k4-laplace-eps20-correct-cleanq"),
    ({"scheme": "texthide-intra", "point": {"m": "256", "k": 4}}, "texthide", "texthide-intra-m256-k4"),
    ({"scheme": "dchi", "variant": "dchi-text", "eta": 50.0}, "dchi-text", "dchi-text-eta50"),
    ({"scheme": {"name": "dp-ie", "epsilon": 2.0}}, "dp-ie", "dp-texthide-intra-m0-k4-gaussian-eps2-correct"),
])
def test_records_of_every_format_are_read_back(record, name, label, capsys):
    s = schemes.from_record(record)
    assert s.name == name and s.label == label
    assert capsys.readouterr().err == ""  # reading a record is not a deprecated use


def test_guarantees_by_kind():
    assert schemes.NoPrivacy().guarantee().kind == "none"
    assert schemes.create("texthide").guarantee().kind == "none"
    cal = {"accounted_epsilon": 7.9, "delta": 1e-5, "valid_dp_guarantee": True, "target_epsilon": 8}
    g = schemes.create("dp-ie").guarantee(calibration=cal)
    assert g.kind == "dp" and g.epsilon == 7.9 and "(7.9, 1e-05)-DP per training example" in g.text
    assert schemes.create("dp-ie").guarantee(calibration=cal, joint=True).kind == "none"
    bad = {**cal, "valid_dp_guarantee": False, "accounted_epsilon": 207.0}
    assert "NOT a valid DP guarantee" in schemes.create("dp-ie", calibration="paper").guarantee(calibration=bad).text
    g = schemes.create("dchi-sequence", eta=10).guarantee(model="MiniLM")
    assert g.kind == "metric-dp" and g.eta == 10 and g.unit == "sentence representation"
    with pytest.raises(PrivnluError, match="needs --eta"):
        schemes.create("dchi-text").guarantee()


def test_representation_schemes_build_their_mechanism():
    import torch

    from privnlu.mechanisms.dp import DPTextHide
    from privnlu.mechanisms.texthide import TextHide
    from privnlu.rng import SecretGenerator

    rng = SecretGenerator(0, warn=False)
    assert schemes.NoPrivacy().hider(dim=8, rng=rng) is None
    th = schemes.create("texthide", m=4, k=2).hider(dim=8, rng=rng)
    assert isinstance(th, TextHide) and th.k == 2 and len(th.pool) == 4
    inter = schemes.create("texthide-inter", m=4, k=2).hider(dim=8, rng=rng, public=torch.randn(10, 8))
    assert inter.inter and inter.n_private == 1
    dp = schemes.create("dp-ie", epsilon=4.0).hider(dim=8, rng=rng, epochs=3)
    assert isinstance(dp, DPTextHide) and dp.calibration.participations == 12 and dp.calibration.epsilon <= 4.0
    assert schemes.NoPrivacy().release_hider(dim=8, rng=rng).k == 1  # the identity, in the release format


# -- adding a scheme is one module --------------------------------------------------------------------------------

@pytest.fixture
def mask_only():
    """A scheme defined and registered here, as a new module would: TextHide's masks without mixing (k = 1)."""
    from privnlu.schemes.base import ThreatModel
    from privnlu.schemes.texthide import TextHideIntra

    @schemes.register
    @dataclass(frozen=True)
    class MaskOnly(TextHideIntra):
        name = "mask-only"
        title = "sign masks only"
        aliases = ()
        threat = ThreatModel(releases="masked representations", adversary="anyone", query="one pool mask",
                             attacks=("reconstruction",), audit_attack="reconstruction, then search")

        def validate(self) -> None:
            object.__setattr__(self, "k", 1)
            super().validate()

    yield MaskOnly
    del registry.SCHEMES["mask-only"]


def test_a_new_scheme_module_is_all_it_takes(mask_only, tmp_path):
    from privnlu.audit import AuditSettings, grid
    from privnlu.cli.main import build_parser
    from privnlu.training.engine import RunSpec

    assert "mask-only" in schemes.names()
    spec = RunSpec(task="sst2", scheme=schemes.create("mask-only", m=16))
    assert spec.label == "sst2-texthide-intra-m16-k1" and spec.scheme.key_material
    points = grid(AuditSettings(task="sst2", schemes=("none", "mask-only"), texthide=((16, 4),)))
    assert [p.scheme for p in points] == ["none", "mask-only"]
    args = build_parser("train").parse_args(["train", "--task", "sst2", "--scheme", "mask-only", "--m", "8"])
    from privnlu.cli.common import scheme_from_args

    assert scheme_from_args(args).label == "texthide-intra-m8-k1"


# -- no other module compares scheme names ------------------------------------------------------------------------

#: an expression that holds a scheme's name: ``scheme``, ``spec.scheme``, ``r["scheme"]``, ``r.get("scheme")``,
#: ``scheme.name``, ``scheme_of(r)`` (a scheme's properties, ``scheme.formal`` or ``scheme.release``, are not names)
NAME_EXPR = re.compile(r"scheme(\.name|_of\(.*\)|\[['\"]scheme['\"]\]|['\"]\]|['\"]\))?$")


def scheme_name_comparisons(root: Path = SRC) -> list[str]:
    """``x.scheme == "texthide"``, ``r["scheme"] in ("none", "dp")`` and the like outside privnlu.schemes:
    comparisons of a string literal that is a scheme name (canonical or old) with an expression holding a name."""
    names = set(registry.SCHEMES) | set(registry.ALIASES) | {"dchi"}
    found = []
    for path in sorted(root.rglob("*.py")):
        if "schemes" in path.relative_to(root).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            literals = {c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str)}
            mentions = any(NAME_EXPR.search(ast.unparse(s)) for s in sides if not isinstance(s, ast.Constant))
            if mentions and literals & names:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_at_most_five_scheme_name_comparisons_remain_outside_the_registry():
    found = scheme_name_comparisons()
    assert len(found) <= 5, "\n".join(found)


def test_the_comparison_count_sees_a_comparison(tmp_path):
    (tmp_path / "x.py").write_text('def f(spec, r):\n    return spec.scheme == "dp" or r["scheme"] in ("texthide", "x") '
                                   'or spec.scheme.formal == "dp"\n')
    assert len(scheme_name_comparisons(tmp_path)) == 2  # the third compares a property, not a name


def test_math_inf_pool():
    assert schemes.create("texthide", m="inf").m == math.inf and not schemes.create("texthide", m="inf").key_material


def test_every_scheme_trains_from_the_command_line_and_its_model_predicts(tiny_model, toy_glue, tmp_path, capsys):
    """``train --scheme`` takes each scheme of the registry; a d_chi model privatizes each query as its dev set was;
    the old spelling ``--scheme texthide --inter`` still works with one notice."""
    from privnlu.cli.main import main
    from privnlu.model_folder.predict import load

    base = ["train", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir",
            str(tmp_path / "c"), "--epochs", "1", "--batch-size", "8", "--quiet", "--public-size", "50"]
    for name, extra in (("none", []), ("texthide", ["--m", "4", "--k", "2"]), ("texthide-inter", ["--k", "2"]),
                        ("dp-ie", ["--dp-epsilon", "8"]), ("dchi-text", ["--eta", "50"]),
                        ("dchi-token", ["--eta", "50"]), ("dchi-sequence", ["--eta", "50"])):
        out = tmp_path / name
        assert main([*base, "--scheme", name, *extra, "--out", str(out)]) == 0, name
        model = load(out)
        rows = model.predict(["a fine good film"])
        assert rows[0]["prediction"] in ("0", "1"), name
        assert ("privatized on the user's side" in model.describe()) == (schemes.get(name).release == "once"), name
    capsys.readouterr()
    assert main([*base, "--scheme", "texthide", "--inter", "--k", "2", "--out", str(tmp_path / "old")]) == 0
    err = capsys.readouterr().err
    assert "--scheme texthide --inter is deprecated" in err and "texthide-inter" in err
    import json

    assert json.loads((tmp_path / "old" / "result.json").read_text())["variant"] == "texthide-inter"
