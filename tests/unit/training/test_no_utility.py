"""A model that learned nothing says so: where the dev score's 95 % interval reaches the majority-class score,
``privnlu train`` ends with a warning, the model card says so at the top (and shows the score's interval), and
``privnlu predict`` and ``privnlu.predict`` write one line to stderr when they load the model."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import toy_glue_dir, train_once
from privnlu.cli.main import main
from privnlu.cli.train import no_utility_warning
from privnlu.model_folder.card import learned_nothing, model_card


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model):
    """A frozen tiny run on a 24-row toy SST-2: 12 dev rows, so the score's interval is wide."""
    root = tmp_path_factory.mktemp("noutil")
    glue = toy_glue_dir(root, 24)
    env = (root, ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
                  str(root / "cache"), "--quiet", "--batch-size", "8", "--epochs", "1", "--scheme", "none"])
    return train_once(env, "run")


def _record(score: float, ci: list[float] | None, majority: float = 50.0) -> dict:
    dev = {"accuracy": score / 100, "score": score, **({"score_ci95": ci} if ci is not None else {})}
    return {"label": "x", "metric": "accuracy", "score": score, "best_score": score, "eval": {"dev": dev},
            "majority": {"score": majority}}


def test_the_rule_is_the_interval_not_the_point():
    assert learned_nothing(_record(60.0, [45.0, 74.0]))  # above the majority, but its interval reaches it
    assert not learned_nothing(_record(60.0, [55.0, 65.0]))
    assert learned_nothing(_record(50.0, None)) and not learned_nothing(_record(51.0, None))  # no interval: the score
    assert not learned_nothing({"score": 10.0, "eval": {"dev": {}}})  # no majority recorded: no claim


def test_train_ends_with_the_warning(capsys, tmp_path, tiny_model):
    glue = toy_glue_dir(tmp_path, 24)
    assert main(["train", "--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
                 str(tmp_path / "cache"), "--quiet", "--batch-size", "8", "--epochs", "1", "--scheme", "none",
                 "--out", str(tmp_path / "run")]) == 0
    rec = json.loads((tmp_path / "run" / "result.json").read_text())
    lo, hi = rec["eval"]["dev"]["score_ci95"]
    assert lo <= rec["majority"]["score"]  # 12 dev rows: the interval is wide
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"WARNING: no useful utility: the dev score {rec['score']:.2f} (95 % CI {lo:.2f} to "
                           f"{hi:.2f}) reaches always predicting the majority class "
                           f"({rec['majority']['score']:.2f})"), last
    assert no_utility_warning(_record(60.0, [55.0, 65.0]), "dev", lambda: None) is None
    said = no_utility_warning(_record(60.0, [45.0, 74.0]), "dev", lambda: None)
    assert said and "the dev score 60.00 (95 % CI 45.00 to 74.00) reaches" in said


def test_the_card_says_so_at_the_top_and_shows_the_interval(run):
    pipeline = json.loads((run / "model" / "privnlu.json").read_text())
    card = (run / "model" / "README.md").read_text()
    assert card.index("**No useful utility:**") < card.index("## Files")
    rec = json.loads((run / "result.json").read_text())
    lo, hi = rec["eval"]["dev"]["score_ci95"]
    assert f"(95 % CI {lo:.2f} to {hi:.2f})" in card
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["useful_utility"] is False and meta["score_ci95"] == [lo, hi]
    rec["eval"] = {"dev": {"accuracy": 0.6, "score": 60.0, "score_ci95": [55.0, 65.0]}}
    rec["score"] = 60.0
    card = model_card(pipeline, rec)
    assert "No useful utility" not in card and "headline score 60.00 (95 % CI 55.00 to 65.00)" in card
    assert yaml.safe_load(card.split("---\n")[1])["useful_utility"] is True
    rec["eval"]["dev"]["score_ci95"] = [45.0, 74.0]  # the point is above the majority class, its interval is not
    card = model_card(pipeline, rec)
    assert "**No useful utility:** the score 60.00 (95 % CI 45.00 to 74.00) reaches the majority-class score" in card


def test_predict_cli_and_api_say_it_in_one_line(capsys, run, tmp_path, tiny_model):
    import privnlu

    capsys.readouterr()
    assert main(["predict", "--run", str(run), "--text", "a fine film", "--quiet"]) == 0
    out = capsys.readouterr()
    warned = [line for line in out.err.splitlines() if "no useful utility" in line]
    assert len(warned) == 1 and "majority-class score 50.00" in warned[0] and "95 % CI" in warned[0]
    assert json.loads(out.out)["text"] == "a fine film"
    privnlu.predict(run, ["a fine film"])
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "no useful utility" in line]) == 1
    useful = tmp_path / "model"  # the same folder recording a useful score: no line
    import shutil

    shutil.copytree(run / "model", useful)
    cfg = json.loads((useful / "privnlu.json").read_text())
    cfg["majority"] = {"score": 0.0}
    (useful / "privnlu.json").write_text(json.dumps(cfg))
    privnlu.predict.load(useful, model=str(tiny_model)).predict(["a fine film"])  # a copied folder: name the encoder
    assert "no useful utility" not in capsys.readouterr().err
