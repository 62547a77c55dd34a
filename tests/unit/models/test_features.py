"""Feature extraction and its cache: order, pooling, cache hits, stale and corrupt files."""

import pytest
import torch

from privnlu.data import TextDataset
from privnlu.errors import PrivnluError
from privnlu.models import FeatureCache, extract_features, load_encoder

TEXTS = ["a short one", "this sentence is quite a bit longer than the others are", "mid length text here", "x"]


@pytest.fixture(scope="module")
def encoder(tiny_model):
    return load_encoder(tiny_model)


def ds(texts=TEXTS, labels=None):
    return TextDataset("toy", "train", list(texts), labels or [0, 1, 0, 1][: len(texts)], label_names=("a", "b"))


@pytest.mark.parametrize("pooling", ["cls", "pooler", "mean"])
def test_batched_sorted_extraction_matches_one_by_one(tiny_model, pooling):
    enc = load_encoder(tiny_model, pooling=pooling)
    batched = extract_features(enc, TEXTS, batch_size=3, progress=False)
    single = torch.cat([extract_features(enc, [t], progress=False) for t in TEXTS])
    torch.testing.assert_close(batched, single, atol=1e-5, rtol=1e-4)
    assert batched.shape == (4, enc.dim)


def test_pooling_rules_differ(tiny_model):
    outs = [extract_features(load_encoder(tiny_model, pooling=p), TEXTS, progress=False) for p in ("cls", "pooler", "mean")]
    assert not torch.allclose(outs[0], outs[1]) and not torch.allclose(outs[0], outs[2])


def test_pairs_use_token_types(encoder):
    a = extract_features(encoder, ["first part"], ["second part"], progress=False)
    b = extract_features(encoder, ["first part second part"], progress=False)
    assert not torch.allclose(a, b)


def test_cache_hit_stale_and_corrupt(encoder, cache_dir, capsys):
    cache = FeatureCache(cache_dir)
    first = cache.get(encoder, ds(), progress=False)
    again = cache.get(encoder, ds(), progress=False)
    assert torch.equal(first.features, again.features) and again.path == first.path
    # same key, different texts (a user edited the file) -> recomputed with a one-line notice, never silently reused
    changed = ds(["a short one!", *TEXTS[1:]])
    capsys.readouterr()
    recomputed = cache.get(encoder, changed, progress=False)
    assert "data changed since its features were cached; recomputing" in capsys.readouterr().err
    assert not torch.equal(recomputed.features[0], first.features[0]) and torch.allclose(recomputed.features[1:], first.features[1:], atol=1e-4)
    assert torch.equal(cache.get(encoder, changed, progress=False).features, recomputed.features)  # now a hit
    assert capsys.readouterr().err == ""
    assert FeatureCache(cache_dir, refresh=True).get(encoder, changed, progress=False).features.shape == (4, encoder.dim)
    first.path.write_bytes(b"garbage")
    with pytest.raises(PrivnluError, match="corrupt"):
        cache.get(encoder, changed, progress=False)


def test_cache_key_separates_settings(encoder, cache_dir):
    cache = FeatureCache(cache_dir)
    a = cache.get(encoder, ds(), max_length=8, progress=False)
    b = cache.get(encoder, ds(), max_length=16, progress=False)
    assert a.path != b.path


def test_not_a_model_folder(tmp_path):
    with pytest.raises(PrivnluError, match="not a model folder"):
        load_encoder(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"junk")
    with pytest.raises(PrivnluError, match="could not load"):
        load_encoder(tmp_path)


def test_a_long_encoding_says_how_long_it_will_take_once_and_early(monkeypatch, capsys):
    import privnlu.models.features as features

    clock = iter([0.0, 1.0, 2.5, 3.0, 4.0, 7.0])
    monkeypatch.setattr(features.time, "perf_counter", lambda: next(clock))
    p = features.Projection(1000, "encoding tweets/train", 33519)  # starts at t = 0
    p.advance(10)  # t = 1: too early to project
    p.advance(30)  # t = 2.5: 40 of 1,000 units in 2.5 s -> about 62 s
    p.advance(30)
    err = capsys.readouterr().err
    assert err.count("privnlu: encoding tweets/train: 33,519 sentences, about 1 minute(s)") == 1
    quick = features.Projection(100, "encoding dev", 300)  # t = 4
    quick.advance(90)  # t = 7: 90 of 100 units in 3 s, projected well under a minute: nothing said
    assert capsys.readouterr().err == ""
