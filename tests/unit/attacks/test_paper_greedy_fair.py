"""The paper's greedy rule run fairly (fair-greedy), the pair MLP's training schedule, and the paper-method
attack's pair accuracies, on tiny synthetic releases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from privnlu.attacks.conditions import Condition
from privnlu.attacks.reconstruction.attack import membership
from privnlu.attacks.reconstruction.paper import (MLPConfig, dense_rows, fair_greedy_clusters, lr_factor, pair_accuracy,
                                                  paper_greedy_clusters, train_pair_mlp)
from privnlu.attacks.reconstruction.paper_method import PaperMethodConfig, paper_method_audit, release_pair_accuracy
from privnlu.errors import PrivnluError
from privnlu.mechanisms.release import hide_dataset
from privnlu.mechanisms.texthide import TextHide
from privnlu.rng import SecretGenerator


def _true_share(n: int, k: int, epochs: int, seed: int = 0) -> tuple[np.ndarray, torch.Tensor]:
    h = TextHide(1.0, k, dim=8, rng=SecretGenerator(seed, warn=False))
    _, key = hide_dataset(h, torch.randn(n, 8), torch.zeros(n, 1), epochs=epochs, batch_size=n)
    M = membership(key.partners, n)
    S = ((M @ M.T) > 0).float().numpy()
    np.fill_diagonal(S, 0.0)
    return S, M


def _found(groups, M) -> int:
    return len({int(M[g].sum(0).argmax()) for g in groups})


@pytest.mark.parametrize("k,missed", [(1, 0), (2, 0), (4, 1)])
def test_fair_greedy_recovers_every_original_from_the_true_share_matrix(k, missed):
    # a perfect pair network: every original gets its own group (at k = 4 a late group may still mix two
    # originals: at most 1 of 40 here)
    n, epochs = 40, 10
    S, M = _true_share(n, k, epochs)
    groups = fair_greedy_clusters(S, n, k, k * epochs)
    assert len(groups) == n
    assert _found(groups, M) >= n - missed
    purity = np.mean([float(M[g][:, int(M[g].sum(0).argmax())].mean()) for g in groups])
    assert purity > 0.95


@pytest.mark.parametrize("k", [4, 6])
def test_fair_greedy_finds_more_originals_than_table1s_rule_on_a_perfect_pair_network(k):
    # Table 1's rule runs out of free encodings and grows duplicates; fair-greedy's tie-break, early audit and
    # duplicate control find more originals from the same true share matrix (k = 6 with 40 originals is crowded:
    # each encoding mixes 6 of them, so neither rule finds all)
    n, epochs = 40, 10
    S, M = _true_share(n, k, epochs)
    old = paper_greedy_clusters(dense_rows(torch.from_numpy(S)), len(S), n, k, k * epochs)
    fair = fair_greedy_clusters(S, n, k, k * epochs)
    assert _found(fair, M) > _found(old, M)
    assert _found(fair, M) >= 0.85 * n


def test_fair_greedy_rejects_an_unknown_growth():
    with pytest.raises(PrivnluError, match="growth"):
        fair_greedy_clusters(np.zeros((4, 4)), 2, 1, 2, growth="sideways")


def test_cosine_schedule_warms_up_peaks_at_the_papers_rate_and_decays():
    cfg = MLPConfig(schedule="cosine", warmup=0.1)
    f = [lr_factor(s, 100, cfg) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and max(f) == pytest.approx(1.0)
    assert f[-1] < 0.01 and all(a >= b for a, b in zip(f[10:], f[11:]))
    assert lr_factor(50, 100, MLPConfig()) == 1.0  # "constant": Table 1's records
    with pytest.raises(PrivnluError, match="schedule"):
        MLPConfig(schedule="step")


@pytest.fixture
def one_thread():
    # tiny models: torch's thread pool only adds contention on a busy machine
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_pair_mlp_learns_an_easy_pair_task(one_thread):
    # k = 1 style pairs: positives are the same vector (abs, as the attack sees it), negatives two different ones
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 6, generator=g).abs()
    i, j = torch.randint(400, (4000,), generator=g), torch.randint(400, (4000,), generator=g)
    y = (torch.rand(4000, generator=g) < 0.5).float()
    b_idx = torch.where(y.bool(), i, j)
    y = (i == b_idx).float()
    net = train_pair_mlp(x[i], x[b_idx], y, MLPConfig(hidden=(64, 32), epochs=15, batch_size=256, schedule="cosine"), g)
    ti, tj = torch.randint(400, (2000,), generator=g), torch.randint(400, (2000,), generator=g)
    ty = (torch.rand(2000, generator=g) < 0.5)
    tb = torch.where(ty, ti, tj)
    assert pair_accuracy(net.logit, x[ti], x[tb], (ti == tb).float()) > 0.9


def test_release_pair_accuracy_natural_and_balanced():
    share = torch.tensor([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    always_no = torch.full((4, 4), -1.0)
    r = release_pair_accuracy(always_no, share)
    assert r["natural_accuracy"] == pytest.approx(5 / 6, abs=1e-4)  # one sharing pair of six
    assert r["balanced_accuracy"] == pytest.approx(0.5) and r["sharing_pairs"] == pytest.approx(1 / 6, abs=1e-4)


def test_paper_method_audit_reports_every_scorer_and_rule(one_thread):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(60, 16, generator=g)
    cfg = PaperMethodConfig(mlp=MLPConfig(hidden=(16, 8), epochs=1), sim_releases=1, sim_epochs=4,
                            pairs_per_release=400, heldout_pairs=200, repair_rounds=1, ls_iters=2, ls_restarts=1)
    out = paper_method_audit(x[:12], torch.randint(2, (12,), generator=g), x[12:], Condition("m1-k2", 1.0, 2),
                             SecretGenerator(0, warn=False), epochs=4, num_labels=2, config=cfg)
    assert set(out["methods"]) == {f"{r}/{s}" for r in ("paper-greedy", "fair-greedy") for s in ("mlp", "factorised", "true")}
    assert set(out["pair_accuracy"]) == {"mlp", "factorised"}
    assert out["methods"]["fair-greedy/true"]["originals_found"] == 12  # the oracle: a perfect pair network
    with pytest.raises(PrivnluError, match="pair data"):
        PaperMethodConfig(pair_data="the-defenders-keys")
