"""The issue-10 recipes on a tiny model and a toy SST-2: selection on held-out train, curves, public corpus size,
the DP-IE scheme and the report's paper / ours / difference cells."""

import pytest

from conftest import toy_glue_dir
from privnlu.experiments import huang2020, xie2022
from privnlu.experiments.pipeline import RunSpec
from privnlu.experiments.selection import holdout_split
from privnlu.training import TrainConfig

TINY = huang2020.Scale("test", None, None, 2, 8, (1e-3, 3e-3), (3e-5,), min_texthide_steps=30, max_length=16,
                       min_public=100)


@pytest.fixture()
def base(tmp_path, tiny_model):
    glue = toy_glue_dir(tmp_path, 80)
    return RunSpec(task="sst2", model=str(tiny_model), data_dir=str(glue), cache_dir=str(tmp_path / "cache"),
                   train=TrainConfig(seed=0))


def test_holdout_is_ten_percent_of_train_and_disjoint(base):
    from privnlu.experiments.pipeline import prepare

    prep = prepare(base, progress=False)
    split = holdout_split(prep)
    held = split.evals["holdout"]
    assert len(held) == 8 and len(split.train) == 72 and list(split.evals)[0] == "dev"
    assert not set(held.texts_a) & set(split.train.texts_a)  # toy sentences are unique
    assert split.eval_x["holdout"].shape[0] == 8 and split.train_x.shape[0] == 72


def test_table1_selects_on_holdout_and_records_curves(tmp_path, base):
    recs = huang2020.table1(tmp_path / "t1", tasks=("sst2",), base=base, progress=False, scale_name=TINY, public="wiki")
    assert [r["variant"] for r in recs] == ["baseline", "texthide-intra", "texthide-inter"]
    for r in recs:
        sel = r["selection"]
        assert len(sel["candidates"]) == 2 and "not dev" in sel["on"]
        assert r["score"] == r["dev_curve"][sel["chosen_epoch"] - 1]
        chosen = max(sel["candidates"], key=lambda c: c["best_holdout"])
        assert chosen["best_epoch"] == sel["chosen_epoch"]
    # TextHide runs get at least 30 optimizer steps: 72 examples / batch 8 = 9 steps per epoch -> 4 epochs
    assert len(recs[0]["dev_curve"]) == 2 and len(recs[1]["dev_curve"]) == 4
    assert recs[2]["n_public"] > recs[2]["n_train"] and recs[2]["spec"]["public"] == "wiki"
    again = huang2020.table1(tmp_path / "t1", tasks=("sst2",), base=base, progress=False, scale_name=TINY, public="wiki")
    assert [r["seconds"] for r in again] == [r["seconds"] for r in recs]  # resumed, not retrained


def test_xie2022_figure1_uses_the_unmasked_scheme_and_clean_queries(tmp_path, base):
    recs = xie2022.figure1(tmp_path / "f1", tasks=("sst2",), base=base, epsilons=(2.0,), mechanisms=("gaussian",),
                           calibrations=("paper",), scale_name=TINY, progress=False)
    dp = [r for r in recs if r["scheme"] == "dp"]
    assert len(recs) == 3 and len(dp) == 1
    assert dp[0]["m"] == "0" and dp[0]["dp_scheme"] == "dp-ie" and dp[0]["spec"]["dp"]["noisy_queries"] is False
    assert dp[0]["dp"]["calibration"] == "paper" and not dp[0]["dp"]["valid_dp_guarantee"]
    assert dp[0]["accuracy"] is not None
    masked = xie2022.figure1(tmp_path / "f1m", tasks=("sst2",), base=base, epsilons=(2.0,), mechanisms=("gaussian",),
                             calibrations=("paper",), scale_name=TINY, progress=False, masked=True)
    assert [r for r in masked if r["scheme"] == "dp"][0]["dp_scheme"] == "dp-ie-masked"
