"""Threat models, the FAISS similarity search, the five leakage metrics and `privnlu attack search`."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from privnlu.attacks import SEARCH_THREAT, AttackerView, Corpus, Grant, Capabilities
from privnlu.attacks.conditions import PAPER_CONDITIONS, parse_condition, release
from privnlu.attacks.representation.audit import search_audit
from privnlu.attacks.representation.leakage import (Pairs, identity, jaccard, leakage_scores, same_label, sbert_cosine,
                                                    sbert_embedder, tfidf_cosine)
from privnlu.attacks.representation.search import CosineIndex, SimilaritySearch
from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.mechanisms import TextHide, hide_dataset
from privnlu.rng import SecretGenerator


# -- threat model and attacker view ------------------------------------------------
def test_threat_model_is_immutable_and_never_grants_keys():
    t = Capabilities("t", frozenset({"encodings"}))
    assert t.grants == frozenset({Grant.ENCODINGS})
    with pytest.raises(Exception):
        t.grants = frozenset()  # frozen dataclass
    assert SEARCH_THREAT.to_json()["key_material"] is False
    with pytest.raises(ValueError):
        Capabilities("bad", frozenset({"mask_pool"}))  # no such grant exists


def test_view_refuses_ungranted_fields_and_key_material():
    x = torch.randn(8, 4)
    t = Capabilities("enc-only", frozenset({Grant.ENCODINGS}))
    AttackerView(t, encodings=x)
    with pytest.raises(PrivnluError, match="not granted"):
        AttackerView(t, encodings=x, mixed_labels=torch.zeros(8, 2))
    hider = TextHide(4, 2, dim=4, rng=SecretGenerator(0, warn=False))
    _, key = hide_dataset(hider, x, torch.zeros(8, 2), batch_size=8)
    full = Capabilities("all", frozenset(Grant))
    for bad in (dict(scheme={"pool": hider.pool}), dict(known_pairs=(key, key)), dict(encoder=hider)):
        with pytest.raises(PrivnluError, match="key material"):
            AttackerView(full, encodings=x, **bad)


def test_view_checks_dimensions_and_attack_checks_grants():
    x = torch.randn(5, 4)
    with pytest.raises(PrivnluError, match="mismatched dimensions"):
        AttackerView(SEARCH_THREAT, encodings=x, candidates=Corpus(["a", "b"], torch.randn(2, 3)))
    with pytest.raises(PrivnluError, match="needs the threat model to grant: candidates"):
        SimilaritySearch().run(AttackerView(Capabilities("e", frozenset({Grant.ENCODINGS})), encodings=x))


# -- search ---------------------------------------------------------------------
def test_cosine_index_is_exact_cosine_search():
    g = torch.Generator().manual_seed(0)
    base, q = torch.randn(200, 16, generator=g), torch.randn(30, 16, generator=g)
    sims, idx = CosineIndex(base * torch.rand(200, 1, generator=g) * 10).search(q, 1)  # scale must not matter
    cos = torch.nn.functional.normalize(q, dim=1) @ torch.nn.functional.normalize(base, dim=1).T
    assert np.array_equal(idx[:, 0], cos.argmax(1).numpy())
    assert np.allclose(sims[:, 0], cos.max(1).values.numpy(), atol=1e-5)
    with pytest.raises(PrivnluError, match="mismatched dimensions"):
        CosineIndex(base).search(torch.randn(2, 8))


def test_search_finds_unprotected_examples_and_fails_under_masks():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(300, 64, generator=g)
    corpus = Corpus([f"s{i}" for i in range(300)], x, torch.arange(300) % 2)
    q = torch.arange(0, 300, 3)
    res = search_audit(corpus, q, PAPER_CONDITIONS, SecretGenerator(0, warn=False), embed=None)
    assert res["baseline"]["metrics"]["identity"] == 100.0
    assert res["texthide"]["metrics"]["identity"] < 5  # chance is 1/300; allow a few lucky hits
    assert res["random"]["metrics"]["identity"] < 5
    assert 10 < res["mix-only"]["metrics"]["identity"] < 100  # the largest weight often belongs to the own example


def test_release_truth_is_the_first_component():
    x = torch.randn(20, 8)
    payload, truth, _ = release(x, torch.zeros(20), parse_condition("baseline"), SecretGenerator(0, warn=False), batch_size=8)
    assert torch.equal(payload.x, x[truth])


def test_parse_condition():
    assert parse_condition("texthide").m == 256 and parse_condition("16:4").k == 4
    with pytest.raises(PrivnluError, match="unknown condition"):
        parse_condition("nonsense")


# -- leakage metrics on hand-made pairs ----------------------------------------------
def test_identity_and_jaccard():
    assert identity(["a b", "x"], [" a b ", "y"]).tolist() == [1.0, 0.0]
    # {the, cat, sat} vs {the, cat, ran}: 2 shared of 4
    assert jaccard(["The cat sat", "dogs bark", ""], ["the cat ran", "cats meow", ""]).tolist() == [0.5, 0.0, 1.0]


def test_tfidf_cosine():
    corpus = ["the cat sat", "the dog ran", "a bird flew", "the cat ran"]
    v = tfidf_cosine(["the cat sat", "a bird flew", "the cat"], ["the cat sat", "the dog ran", "the cat sat"], corpus=corpus)
    assert v[0] == pytest.approx(1.0) and v[1] == pytest.approx(0.0)
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vec = TfidfVectorizer().fit(corpus)
    assert v[2] == pytest.approx(cosine_similarity(vec.transform(["the cat"]), vec.transform(["the cat sat"]))[0, 0])
    assert 0 < v[2] < 1


def test_same_label():
    assert same_label([0, 1, 1], [0, 0, 1]).tolist() == [1.0, 0.0, 1.0]


def test_sbert_cosine_with_a_fake_embedder():
    table = {"alpha": [1.0, 0.0], "beta": [0.0, 1.0], "gamma": [1.0, 1.0]}
    embed = lambda texts: torch.tensor([table[t] for t in texts])
    v = sbert_cosine(["alpha", "alpha", "gamma"], ["alpha", "beta", "alpha"], embed=embed)
    assert v == pytest.approx([1.0, 0.0, 2 ** -0.5])
    scores = leakage_scores(Pairs(["alpha", "alpha"], ["alpha", "beta"], [0, 1], [0, 0]), corpus=list(table), embed=embed)
    assert scores == {"identity": 50.0, "jaccard": 50.0, "tfidf": 50.0, "label": 50.0, "sbert": 50.0}


def test_sbert_embedder_uses_mean_pooling(tiny_model):
    embed = sbert_embedder(str(tiny_model))
    v = sbert_cosine(["a fine film", "a fine film"], ["a fine film", "tax law of 1923"], embed=embed)
    assert v[0] == pytest.approx(1.0, abs=1e-6) and v[1] < 1.0


@pytest.mark.slow
def test_sbert_minilm_ranks_paraphrases_above_unrelated():
    embed = sbert_embedder()
    v = sbert_cosine(["the movie was great", "the movie was great"], ["the film was excellent", "stock prices fell sharply"], embed=embed)
    assert v[0] > 0.6 and v[1] < 0.3


# -- CLI ---------------------------------------------------------------------------
def attack_args(tiny_model, toy_glue, tmp_path):
    return ["--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(tmp_path / "c"),
            "--sbert-model", str(tiny_model), "--quiet", "--seed", "0", "--batch-size", "16"]


def test_cli_attack_search(capsys, tmp_path, tiny_model, toy_glue):
    out = tmp_path / "search.json"
    assert main(["attack", "search", *attack_args(tiny_model, toy_glue, tmp_path), "--queries", "40", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["kind"] == "attack" and rec["attack"] == "search" and rec["threat_model"]["key_material"] is False
    assert set(rec["conditions"]) == {"baseline", "mix-only", "texthide", "random"}
    assert rec["conditions"]["baseline"]["metrics"]["identity"] == 100.0
    assert set(rec["conditions"]["texthide"]["metrics"]) == {"identity", "jaccard", "tfidf", "label", "sbert"}
    assert rec["encoder"] == Path(tiny_model).name  # the model's name, not a path of the auditor's machine


@pytest.mark.parametrize("extra,match", [
    (["--queries", "1000"], "more than the 60 examples"),
    (["--conditions", "foo"], "unknown condition"),
    (["--conditions", "0:0"], "k must be an integer"),
])
def test_cli_attack_search_bad_input(capsys, tmp_path, tiny_model, toy_glue, extra, match):
    out = tmp_path / "s.json"
    code = main(["attack", "search", *attack_args(tiny_model, toy_glue, tmp_path), "--queries", "40", "--out", str(out), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and match in err[-1] and not err[-1].startswith("Traceback") and not out.exists()
    assert [ln for ln in err if not ln.startswith("WARNING")] == [err[-1]]


def test_report_has_an_attack_section(tmp_path):
    from privnlu.report import build_report

    rec = {"kind": "attack", "attack": "search", "task": "toy", "n_queries": 3, "corpus": "toy/train", "corpus_size": 9,
           "threat_model": SEARCH_THREAT.to_json(),
           "conditions": {"baseline": {"m": "0", "k": 1, "metrics": {"identity": 100.0, "jaccard": 100.0}}}}
    (tmp_path / "r.json").write_text(json.dumps(rec))
    page = build_report([tmp_path / "r.json"], tmp_path / "rep").read_text()
    assert "similarity search" in page and "similarity-search" in page


def test_markdown_report_has_the_attack_tables_and_examples(tmp_path):
    from privnlu.report import markdown_report

    ex = {"query_number": 4, "query": "a query", "query_label": 1, "retrieved": "a query", "retrieved_label": 1, "exact": True}
    rec = {"kind": "attack", "attack": "invert", "task": "sst2", "n_queries": 3, "corpus": "sst2/dev", "corpus_size": 9,
           "threat_model": SEARCH_THREAT.to_json(),
           "conditions": {"baseline": {"m": "0", "k": 1, "metrics": {"identity": 100.0, "jaccard": 100.0}, "examples": [ex]}}}
    (tmp_path / "r.json").write_text(json.dumps(rec))
    md = markdown_report([tmp_path / "r.json"])
    assert "| baseline | 0 | 1 | 100.00 | 100.00 |" in md
    assert "Table 8 (SST-2)" in md and "| identity | 94.8 | 100.0 | +5.2 |" in md  # the paper's Table 8 beside ours
    assert "as TextHide Table 7" in md and "| 4 | a query | 1 | baseline | a query | 1 | yes |" in md


def test_examples_show_the_same_queries_and_a_first_exact_hit():
    import numpy as np

    from privnlu.attacks.representation.leakage import examples

    corpus = ["a", "b", "c", "d", "e"]
    queries = ["a", "b", "c", "d"]
    # encodings 0..3 encode queries 3, 2, 1, 0 (a release reorders them); only query 3 retrieves itself
    out = examples(np.array([3, 4, 4, 4]), [3, 2, 1, 0], corpus, [0, 1, 0, 1, 0], queries, [0, 1, 0, 1], n=2)
    assert [e["query"] for e in out] == ["a", "b", "d"] and [e["exact"] for e in out] == [False, False, True]
    assert out[0]["retrieved"] == "e" and out[0]["query_label"] == 0 and out[2]["retrieved_label"] == 1
