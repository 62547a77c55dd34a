"""Integration: the real packaged all-MiniLM-L6-v2, end to end on a small slice of a packaged corpus."""

from dataclasses import replace

import pytest

from privnlu.training.engine import RunSpec, prepare, train_run, with_scheme
from privnlu.models import load_encoder
from privnlu.models.features import extract_features
from privnlu.training import TrainConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bbc(tmp_path_factory):
    # BBC News, 5 topics: the majority class is about 23 % of dev
    spec = RunSpec(task="bbc", train_limit=400, max_length=64, public_size=300, cache_dir=str(tmp_path_factory.mktemp("cache")),
                   train=TrainConfig(epochs=15, lr=2e-3, batch_size=32, seed=0))
    return spec, prepare(spec, progress=False)


def test_minilm_loads_offline_with_expected_shape():
    enc = load_encoder()
    assert enc.dim == 384 and enc.model.config.num_hidden_layers == 6
    x = extract_features(enc, ["privacy matters", "so does utility"], progress=False)
    assert x.shape == (2, 384) and float(x.norm(dim=1).min()) > 0


@pytest.mark.parametrize("m,k,inter", [(0, 1, False), (0, 4, False), (4, 2, False), (4, 4, True)])
def test_end_to_end_beats_chance_clearly(bbc, m, k, inter):
    spec, prep = bbc
    majority = max(prep.evals["dev"].labels.count(c) for c in range(5)) / len(prep.evals["dev"])
    cfg = TrainConfig(epochs=15, lr=2e-3, batch_size=32, seed=0, eval_mask="pool" if m else "none")
    run = with_scheme(replace(spec, train=cfg), m=m, k=k, inter=inter)
    rec = train_run(run, prep if not inter else prepare(run, progress=False), progress=False)
    assert rec["score"] > 100 * majority + 25, (rec["score"], majority)
