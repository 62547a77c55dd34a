"""`privnlu predict` is deterministic for every scheme: the same input gets the same label and probability,
averaged over the query's random encodings (the whole TextHide pool, or draws seeded from the query); `--samples N`
gives N fresh draws instead (N = 1: the paper's stochastic inference)."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import toy_glue_dir, train_once
from privnlu.cli.main import main
from privnlu.rng import SecretGenerator

SENTENCE = "thanks for the great service!"


@pytest.fixture(scope="module")
def env(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("determinism")
    glue = toy_glue_dir(root, 40)
    args = ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir", str(root / "cache"),
            "--quiet", "--batch-size", "8", "--epochs", "1"]
    return root, args


def train(env, name, *extra):
    return train_once(env, name, *extra)


@pytest.fixture(scope="module")
def texthide_run(env):
    return train(env, "texthide", "--scheme", "texthide", "--m", "4", "--k", "2")


def test_texthide_predicts_one_answer_and_one_probability_for_a_repeated_sentence(texthide_run):
    from privnlu.model_folder.predict import load

    rows = [load(texthide_run).predict([SENTENCE])[0] for _ in range(3)]  # fresh loads
    model = load(texthide_run)
    rows += [model.predict([SENTENCE])[0] for _ in range(17)]
    assert len(rows) == 20
    assert len({r["prediction"] for r in rows}) == 1 and len({r["probability"] for r in rows}) == 1
    assert model.predict([SENTENCE] * 3) == [rows[0]] * 3  # batched, the same
    assert "all 4 masks of the pool" in model.describe()


def test_the_deterministic_prediction_is_the_exact_average_over_the_pool(texthide_run):
    from privnlu.models.features import extract_features
    from privnlu.model_folder.predict import load

    model = load(texthide_run)
    x = extract_features(model.encoder, [SENTENCE], None, max_length=128, progress=False)[0]
    masks = model.hider.pool.masks
    want = torch.stack([model.head(x * mask).softmax(-1) for mask in masks]).mean(0)
    got = model.probabilities([SENTENCE])[0]
    assert torch.allclose(got, want, atol=1e-6)
    single = [model.head(x * mask).softmax(-1) for mask in masks]
    assert any(not torch.allclose(s, want, atol=1e-4) for s in single)  # the masks do matter to this head


def test_samples_gives_the_papers_stochastic_inference(texthide_run):
    from privnlu.model_folder.predict import load

    model = load(texthide_run, rng=SecretGenerator(3, warn=False))
    probs = {model.predict([SENTENCE], samples=1)[0]["probability"] for _ in range(20)}
    assert len(probs) > 1  # one random pool mask per call
    model = load(texthide_run, samples=1, rng=SecretGenerator(3, warn=False))
    assert "the paper's stochastic inference" in model.describe()


def test_cli_predictions_repeat_exactly_and_samples_is_checked(texthide_run, capsys):
    outs = []
    for _ in range(3):
        assert main(["predict", "--run", str(texthide_run), "--text", SENTENCE, "--quiet"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2] and json.loads(outs[0])["prediction"] in ("0", "1")
    assert main(["predict", "--run", str(texthide_run), "--text", SENTENCE, "--samples", "4", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["prediction"] in ("0", "1")
    assert main(["predict", "--run", str(texthide_run), "--text", SENTENCE, "--samples", "0"]) == 2
    err = capsys.readouterr().err
    assert "--samples" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name,extra", [
    ("inf", ("--scheme", "texthide", "--m", "inf", "--k", "2")),  # a fresh mask per query, no key
    ("dp", ("--scheme", "dp", "--m", "0", "--k", "2", "--dp-epsilon", "8")),  # DP noise on every query
])
def test_keyless_random_encodings_are_averaged_over_draws_seeded_by_the_query(env, name, extra):
    from privnlu.model_folder.predict import QUERY_DRAWS, load

    run = train(env, name, *extra)
    a = load(run, rng=SecretGenerator(1, warn=False))
    b = load(run, rng=SecretGenerator(2, warn=False))  # the fresh-draw generator plays no part
    texts = [SENTENCE, "a bad dull film", SENTENCE]
    pa, pb = a.probabilities(texts), b.probabilities(texts)
    assert torch.equal(pa, pb) and torch.equal(pa[0], pa[2]) and not torch.equal(pa[0], pa[1])
    assert f"{QUERY_DRAWS} encodings seeded from the query" in a.describe()
    one = a.logits([SENTENCE] * 4)  # one fresh encoding per row, as the run's evaluation did
    assert not torch.equal(one[0], one[1])


def test_the_query_seed_is_keyed_with_the_pool(texthide_run, env):
    """Which masks a query gets depends on the owner's key, so the seed reveals nothing without it."""
    from privnlu.model_folder.predict import load

    other = train(env, "texthide-other", "--scheme", "texthide", "--m", "4", "--k", "2")
    a, b = load(texthide_run), load(other)
    assert a.query_rng(SENTENCE, None).words(2).tolist() == load(texthide_run).query_rng(SENTENCE, None).words(2).tolist()
    assert a.query_rng(SENTENCE, None).words(2).tolist() != b.query_rng(SENTENCE, None).words(2).tolist()
    assert a.query_rng(SENTENCE, None).words(2).tolist() != a.query_rng(SENTENCE + " ", None).words(2).tolist()


def test_dchi_predictions_are_deterministic(tiny_model, tmp_path):
    from privnlu.model_folder.predict import ENCODER_DRAWS, load

    glue = toy_glue_dir(tmp_path, 16)
    out = tmp_path / "runs"
    assert main(["dchi", "finetune", "--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model),
                 "--schemes", "dchi-token", "--encoders", "transformer", "--etas", "30", "--epochs", "1",
                 "--max-length", "16", "--batch-size", "8", "--seed", "0", "--out", str(out), "--quiet"]) == 0
    folder = out / "finetune_sst2_transformer_token_eta30"
    a = load(folder, rng=SecretGenerator(1, warn=False)).probabilities([SENTENCE, SENTENCE, "a bad film"])
    b = load(folder, rng=SecretGenerator(2, warn=False)).probabilities([SENTENCE, SENTENCE, "a bad film"])
    assert torch.equal(a, b) and torch.equal(a[0], a[1])
    assert f"{ENCODER_DRAWS} privatizations seeded from the query" in load(folder).describe()
