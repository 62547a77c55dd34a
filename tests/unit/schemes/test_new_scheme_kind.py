"""A scheme of a kind privnlu does not ship, defined in this module alone, goes through training, the audit, the
ledger, the model card and ``privnlu predict``: the scheme protocol (:mod:`privnlu.schemes.kinds`) is all they ask.

The scheme is a toy local randomizer: each sentence representation is clipped to L1 norm C on the user's side and
released once with Laplace noise of scale 2C / epsilon, an epsilon-DP release per example (replace-one sensitivity
2C in L1); every query is privatized the same way. It is registered for this module only.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from conftest import toy_glue_dir
from privnlu.options import OPTIONS
from privnlu.params import param
from privnlu.schemes import FeatureRelease, Guarantee, ReleasedOnceScheme, ThreatModel, names, registered


@dataclass(frozen=True)
class LocalLaplace(ReleasedOnceScheme):
    """Clip each sentence representation to L1 norm C, add Laplace noise of scale 2C / epsilon, release it once."""

    name = "toy-local-laplace"
    title = "toy local Laplace"
    level = "sentence-representation"
    formal = "dp"
    threat = ThreatModel(
        releases="each sentence representation, clipped and noised on the user's side",
        adversary="anyone who receives the release, knowing the encoder, C and epsilon",
        query="privatized the same way on the user's side, fresh noise",
        attacks=("search",),
        audit_attack="similarity search on the noisy representation",
    )
    known_leakage = "A toy local randomizer: epsilon-DP per example for the representation, the labels unprotected."

    epsilon: float = param(OPTIONS["epsilon"].but(default=8.0))
    clip: float = param(OPTIONS["clip"].but(default=1.0))

    @property
    def label(self) -> str:
        return f"{self.name}-eps{self.epsilon:g}"

    def release_features(self, encoder: Any, space: Any, ds: Any, clean: Any, rng: Any, **kw: Any) -> FeatureRelease:
        x = clean.float()
        x = x * (self.clip / x.abs().sum(-1, keepdim=True).clamp_min(self.clip))
        u = rng.uniform(tuple(x.shape)) - 0.5  # Laplace(b) = -b sign(u) log(1 - 2|u|)
        return FeatureRelease(x - (2 * self.clip / self.epsilon) * u.sign() * torch.log1p(-2 * u.abs()))

    def guarantee(self, **context: Any) -> Guarantee:
        return Guarantee("dp", f"{self.epsilon:g}-DP per example for its released representation (local Laplace)",
                         epsilon=self.epsilon, delta=0.0)

    def record_dp(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": 0.0, "clip": self.clip}

    def dp_event(self, **context: Any) -> Any:
        from privnlu.accounting import laplace_event

        return laplace_event(1 / self.epsilon)  # noise scale over sensitivity: (2C / epsilon) / 2C

    def ledger_entry(self, *, calibration: Any = None, model: str = "the encoder") -> dict[str, Any]:
        return {"guarantee": "dp", "mechanism": self.label, "epsilon": self.epsilon, "delta": 0.0,
                "events": self.required_dp_event({}), "meaning": self.guarantee().text}

    @classmethod
    def audit_points(cls, settings: Any) -> list[dict[str, Any]]:
        return [{"epsilon": e} for e in settings.dp_epsilons]

    @classmethod
    def audit_point_name(cls, point: dict[str, Any]) -> str:
        return f"{cls.name}-eps{point['epsilon']:g}"

    @classmethod
    def audit_scheme(cls, point: dict[str, Any], settings: Any, *, eta: float | None = None) -> "LocalLaplace":
        return cls(epsilon=point["epsilon"])

    def card_tags(self) -> list[str]:
        return ["differential-privacy", "local-dp"]

    def card_block(self, privacy: dict, *, joint: bool) -> dict[str, Any]:
        dp = privacy.get("dp") or {}
        return {"ldp_epsilon": dp.get("epsilon"), "ldp_clip": dp.get("clip"),
                "formal_guarantee": "epsilon-DP per example (local)"}

    def card_rows(self, privacy: dict) -> list[str]:
        dp = privacy.get("dp") or {}
        return [f"| local Laplace | clip {dp.get('clip')}, epsilon {dp.get('epsilon')} |"]


@pytest.fixture(scope="module")
def scheme():
    with registered(LocalLaplace):
        yield LocalLaplace


def test_the_registry_takes_and_gives_back_a_scheme_from_outside(scheme):
    from privnlu.schemes import create, from_record

    assert scheme.name in names()
    s = create(scheme.name, epsilon=2.0)
    assert isinstance(s, LocalLaplace) and s.label == "toy-local-laplace-eps2"
    assert from_record({"scheme": scheme.name, "dp": s.record_dp()}) == s


def test_train_ledger_card_and_predict(scheme, tiny_model, tmp_path):
    from privnlu.schemes.ledger import Ledger
    from privnlu.training import TrainConfig
    from privnlu.training.engine import RunSpec, train
    from privnlu.model_folder.predict import load

    glue = toy_glue_dir(tmp_path, 24)
    spec = RunSpec(task="sst2", model=str(tiny_model), scheme=scheme(epsilon=4.0), data_dir=str(glue),
                   cache_dir=str(tmp_path / "cache"), train=TrainConfig(epochs=1, batch_size=8, seed=0))
    ledger = tmp_path / "ledger.json"
    rec = train(spec, tmp_path / "run", progress=False, ledger=ledger)
    assert rec["scheme"] == scheme.name and rec["spec"]["dp"] == {"epsilon": 4.0, "delta": 0.0, "clip": 1.0}
    assert rec["dp"]["epsilon"] == 4.0
    # the card's privacy block, rows and query sentence come from the scheme
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert {"privacy", "differential-privacy", "local-dp"} <= set(meta["tags"])
    assert meta["privacy"]["ldp_epsilon"] == 4.0 and meta["privacy"]["formal_guarantee"] == "epsilon-DP per example (local)"
    assert "| local Laplace | clip 1.0, epsilon 4.0 |" in card
    assert "4-DP per example for its released representation" in card
    assert "Each query is privatized on the user's side with toy local Laplace" in card
    # predict privatizes each query on the user's side, deterministically (seeded by the query)
    model = load(tmp_path / "run")
    assert model.release == scheme(epsilon=4.0) and model.stochastic
    assert "privatized on the user's side with toy local Laplace (epsilon = 4.0, clip = 1.0)" in model.describe()
    rows = model.predict(["a fine good film", "a bad dull film"])
    assert rows == model.predict(["a fine good film", "a bad dull film"]) and len(rows) == 2
    # the ledger records the release with the scheme's own guarantee
    (release,) = [r for r in Ledger.open(ledger).data["releases"] if r["command"] == "train"]
    assert release["guarantee"] == "dp" and release["epsilon"] == 4.0


def test_a_tiny_audit(scheme, tiny_model, tmp_path):
    from privnlu.audit import AuditSettings
    from privnlu.audit.grid import grid
    from privnlu.audit.run import run_audit

    s = AuditSettings(task="tweets", model=str(tiny_model), train_limit=120, dev_limit=40, epochs=1, seed=0,
                      n_private=8, distractors=60, aux_size=20, public_size=40, dp_epsilons=(1.0, 8.0),
                      mi_references=2, schemes=(scheme.name,), cache_dir=str(tmp_path / "cache"))
    assert [p.name for p in grid(s)] == ["toy-local-laplace-eps1", "toy-local-laplace-eps8"]
    recs = run_audit(s, tmp_path / "audit", progress=False)
    assert [r["name"] for r in recs] == ["toy-local-laplace-eps1", "toy-local-laplace-eps8"]
    for r, eps in zip(recs, (1.0, 8.0)):
        assert r["guarantee"]["kind"] == "dp" and r["guarantee"]["epsilon"] == eps
        assert set(r["threats"]) == {"release", "model"} and r["setting"] == f"epsilon = {eps:g}"
        assert r["examples"][0]["released"] == "(32-d noisy representation)"


# -- the budget: consumers call the protocol instead of comparing a scheme's tags -------------------------------

MODES = {"text", "token", "sequence", "null", "rep", "txt", "seq"}


def tag_comparisons(src: Path) -> tuple[list[str], list[str]]:
    """Comparisons of a scheme's ``.formal``/``.release``/``.level`` with a string literal, and of a d_chi mode
    string with a variable that holds one, in the ``.py`` files under ``src``."""
    prop, mode = [], []
    for p in sorted(src.rglob("*.py")):
        for n in ast.walk(ast.parse(p.read_text())):
            if not isinstance(n, ast.Compare):
                continue
            s = ast.unparse(n)
            lits = {c.value for side in [n.left, *n.comparators] for c in ast.walk(side)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if lits and re.search(r"\.(formal|release|level)\b", s):
                prop.append(f"{p}:{n.lineno}")
            if lits & MODES and re.search(r"\b(mode|mechanism|mech|m|unit|level)\b|\['mode'\]|\['mechanism'\]", s):
                mode.append(f"{p}:{n.lineno}")
    return prop, mode


def test_few_comparisons_of_scheme_tags_remain():
    prop, mode = tag_comparisons(Path(__file__).resolve().parents[3] / "src" / "privnlu")
    assert len(prop) + len(mode) <= 10, "\n".join(prop + mode)
