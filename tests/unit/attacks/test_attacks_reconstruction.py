"""The Xie & Hong 2021 reconstruction attack: pair scorer, clustering, coefficients, least squares, success."""

import json
import itertools
import math

import numpy as np

import pytest
import torch

from privnlu.attacks import RECONSTRUCTION_THREAT, AttackerView, Corpus
from privnlu.attacks.conditions import Condition
from privnlu.attacks.reconstruction.audit import reconstruction_audit, score_reconstruction
from privnlu.attacks.reconstruction.attack import (PairScorer, ReconstructionAttack, ReconstructionConfig,
                                                   clique_clusters, threshold_clusters, label_coefficients, membership,
                                                   nmf_clusters, solve_alternating, solve_originals)
from privnlu.errors import PrivnluError
from privnlu.mechanisms.release import hide_dataset
from privnlu.mechanisms.texthide import TextHide
from privnlu.rng import SecretGenerator

SMALL = ReconstructionConfig(sim_releases=2, sim_epochs=8, pairs_per_release=8000, train_epochs=2, ls_steps=150)


def data(n=20, d=32, n_aux=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randint(0, 2, (n,), generator=g), torch.randn(n_aux, d, generator=g)


def test_pair_scorer_blocks_equal_direct_pairs():
    torch.manual_seed(0)
    net = PairScorer(8, 16, 4)
    x = torch.randn(30, 8)
    s = net.score_all(x, block=7)
    i, j = torch.triu_indices(30, 30, 1)
    with torch.no_grad():
        direct = net(x[i], x[j])
    assert torch.allclose(s[i, j], direct, atol=1e-5) and torch.allclose(s, s.T)
    assert torch.isinf(s.diagonal()).all()


def test_clusterings_recover_planted_groups():
    truth = torch.arange(60) // 10  # 6 groups of 10
    scores = torch.where(truth[:, None] == truth[None, :], 3.0, -3.0) + 0.1 * torch.randn(60, 60)
    scores = 0.5 * (scores + scores.T)
    scores.fill_diagonal_(-math.inf)
    for clusters in (threshold_clusters(scores, 6, 1), clique_clusters(scores, 6, 1, size=12)):
        assert sorted(sorted(c.tolist()) for c in clusters) == [list(range(10 * g, 10 * g + 10)) for g in range(6)]


def test_label_coefficients_split_each_class_mass():
    # encoding 0 is in groups 0 (label 0) and 1 (label 1) with mixed label (0.3, 0.7); groups' labels from members
    clusters = [torch.tensor([0, 1]), torch.tensor([0, 2])]
    y = torch.tensor([[0.3, 0.7], [1.0, 0.0], [0.0, 1.0]])
    slots, mask, lam, cls = label_coefficients(clusters, y, 3)
    assert cls[0].tolist() == [0, 1] and lam[0].tolist() == pytest.approx([0.3, 0.7])
    assert lam[1, 0] == pytest.approx(1.0) and mask.sum().item() == 4


def known_mixes(seed=0):
    """200 masked mixes of two of five originals, with lambda exact and the two in different classes."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(5, 16, generator=g)
    slots = torch.randint(0, 5, (200, 2), generator=g)
    slots[:, 1] = (slots[:, 0] + 1 + torch.randint(0, 4, (200,), generator=g)) % 5
    lam = torch.rand(200, 1, generator=g) * 0.6 + 0.2
    lam = torch.cat([lam, 1 - lam], 1)
    signs = torch.where(torch.rand(200, 16, generator=g) < 0.5, -1.0, 1.0)
    return X, slots, lam, signs * (lam[:, :, None] * X[slots]).sum(1)


def test_alternating_least_squares_under_abs_recovers_known_mixes():
    X, slots, lam, enc = known_mixes()
    rec = solve_alternating(enc, slots, torch.ones(200, 2, dtype=torch.bool), lam, 5, iters=60, restarts=4)
    assert torch.nn.functional.cosine_similarity(rec.abs(), X.abs()).min() > 0.99
    # and it does need the mixes: with the slots shuffled across encodings it recovers far less
    wrong = slots[torch.randperm(200, generator=torch.Generator().manual_seed(1))]
    bad = solve_alternating(enc, wrong, torch.ones(200, 2, dtype=torch.bool), lam, 5, iters=60, restarts=4)
    assert torch.nn.functional.cosine_similarity(bad.abs(), X.abs()).mean() < 0.97


def test_nmf_clustering_recovers_overlapping_groups_from_poor_seeds():
    """8 originals, 240 encodings each holding 2 of them; seeds are the true groups with half their members
    replaced at random. The factorisation of the affinity repairs them (each seed's best match is its group)."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8, 64, generator=g)
    slots = torch.stack([torch.arange(240) % 8, (torch.arange(240) % 8 + 1 + torch.randint(0, 7, (240,), generator=g)) % 8], 1)
    feats = (X[slots] * torch.tensor([0.6, 0.4])[None, :, None]).sum(1).abs()
    feats = feats - feats.mean(0)
    member = torch.zeros(240, 8)
    member[torch.arange(240)[:, None], slots] = 1.0
    seeds = []
    for j in range(8):
        true = member[:, j].nonzero()[:, 0]
        keep = true[torch.randperm(len(true), generator=g)[: len(true) // 2]]
        seeds.append(torch.cat([keep, torch.randint(0, 240, (len(true) // 2,), generator=g)]))
    seed_purity = torch.stack([member[c, j].mean() for j, c in enumerate(seeds)]).mean()
    groups = nmf_clusters(feats, 8, 60, seeds)
    purity = torch.stack([member[c].sum(0).max() / len(c) for c in groups]).mean()
    found = {int(member[c].sum(0).argmax()) for c in groups}
    assert purity > seed_purity + 0.15 and len(found) == 8


def test_least_squares_under_abs_recovers_known_mixes():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(5, 16, generator=g)
    slots = torch.randint(0, 5, (200, 2), generator=g)
    slots[:, 1] = (slots[:, 0] + 1 + torch.randint(0, 4, (200,), generator=g)) % 5  # two distinct originals
    lam = torch.rand(200, 1, generator=g) * 0.6 + 0.2
    lam = torch.cat([lam, 1 - lam], 1)
    signs = torch.where(torch.rand(200, 16, generator=g) < 0.5, -1.0, 1.0)
    enc = signs * (lam[:, :, None] * X[slots]).sum(1)
    cls = torch.stack([slots[:, 0] * 0, torch.ones(200, dtype=torch.long)], 1)  # different classes: lambda is exact
    rec = solve_originals(enc, slots, torch.ones(200, 2, dtype=torch.bool), lam, cls, 5, steps=400, lr=0.05)
    cos = torch.nn.functional.cosine_similarity(rec.abs(), X.abs())
    assert cos.min() > 0.97


def test_attack_reaches_100_percent_without_defence():
    x, y, aux = data()
    r = reconstruction_audit(x, y, Condition("none", 0, 1), SecretGenerator(0, warn=False), epochs=8,
                             auxiliary=Corpus([""] * len(aux), aux), config=SMALL)
    assert r["methods"]["clique"]["success"] >= 95 and r["methods"]["clique"]["cosine_to_truth"] > 0.99
    assert r["methods"]["threshold"]["success"] >= 80 and r["methods"]["nmf"]["success"] >= 95
    assert r["methods"]["paper-greedy"]["success"] >= 95
    assert r["n_encodings"] == 160 and r["pair_train_accuracy"] > 0.9
    assert r["attacker_config"]["nmf_repair_rounds"] == SMALL.nmf_repair_rounds  # the record says which attack ran
    assert r["methods"]["nmf"]["claimed"] >= r["methods"]["nmf"]["success_lenient"]
    json.dumps(r["attacker_config"])  # serialisable as it stands


def test_attack_is_at_chance_on_encodings_of_random_vectors():
    """Encodings that carry no information about the originals: success must stay near 1/n."""
    x, y, aux = data(n=30)
    rng = SecretGenerator(0, warn=False)
    payload, key = hide_dataset(TextHide(0, 1, dim=32, rng=rng), x, torch.nn.functional.one_hot(y).float(), epochs=8, batch_size=30)
    noise = torch.randn(payload.x.shape, generator=torch.Generator().manual_seed(5))  # encodings of random vectors
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=noise, mixed_labels=payload.y,
                        scheme={"m": "0", "k": 1, "epochs": 8}, auxiliary=Corpus([""] * len(aux), aux))
    for r in ReconstructionAttack(SMALL, ("clique", "nmf")).run(view):
        s = score_reconstruction(r.recovered, r.clusters, membership(key.partners, 30), x)
        assert s["success"] <= 100 * 4 / 30, r.method  # chance: 1 of 30 per original; binomial(30, 1/30) > 4 has p < 0.01


@pytest.mark.parametrize("scheme,enc_rows,match", [
    ({"m": "0", "k": 1, "epochs": 8}, 12, "not a whole number of epochs"),
    ({"m": "0", "k": 1, "epochs": 8}, 8, "too few encodings to cluster"),
    ({"m": "0", "k": 1}, 16, "must state 'epochs'"),
])
def test_bad_attack_input(scheme, enc_rows, match):
    aux = torch.randn(50, 8)
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=torch.randn(enc_rows, 8), mixed_labels=torch.zeros(enc_rows, 2),
                        scheme=scheme, auxiliary=Corpus([""] * 50, aux))
    with pytest.raises(PrivnluError, match=match):
        ReconstructionAttack(SMALL).run(view)
    with pytest.raises(PrivnluError, match="mismatched dimensions"):
        AttackerView(RECONSTRUCTION_THREAT, encodings=torch.randn(16, 8), auxiliary=Corpus(["a"], torch.randn(1, 9)))


def test_report_section_for_reconstruction(tmp_path):
    import json

    from privnlu.report import build_report

    rec = {"kind": "attack", "attack": "reconstruct", "task": "toy", "n_queries": 20, "epochs": 8,
           "threat_model": RECONSTRUCTION_THREAT.to_json(),
           "conditions": {"m1-k4": {"m": "1", "k": 4, "n_encodings": 160, "attack_seconds": 3.0,
                                    "pair_accuracy": {"mlp": {"train": 0.8, "heldout": 0.7, "release": {"balanced_accuracy": 0.65}}},
                                    "methods": {"paper-greedy": {"success": 70.0, "success_lenient": 70.0, "success_strict": 60.0,
                                                                 "success_sentence": 50.0, "n_distractors": 5000,
                                                                 "cosine_to_truth": 0.9}}}}}
    scale = {"kind": "attack", "attack": "reconstruct-scale", "task": "toy", "n_private": 100, "n_encodings": 5000,
             "graph_neighbours": 100, "success": {"nmf": {"success_lenient": 90.0, "success_strict": 80.0}},
             "attack_total_seconds": 60.0, "peak_rss_gib": 1.5}
    (tmp_path / "r.json").write_text(json.dumps({**rec, "task": "cola"}))
    (tmp_path / "s.json").write_text(json.dumps(scale))
    again = {**scale, "nmf_repair_iters": 40, "nmf_repair_rounds": 3, "sample_seed": 1, "defender_seed": 2,
             "claimed": {"nmf": 93.0}}
    (tmp_path / "s2.json").write_text(json.dumps(again))
    page = build_report([tmp_path / "r.json", tmp_path / "s.json", tmp_path / "s2.json"], tmp_path / "rep").read_text()
    assert "<td>k-NN graph 100, repair 3 x 40</td><td>1 / 2</td><td>nmf</td><td>90.00</td><td>80.00</td>" in page
    assert "<td>93.00</td>" in page  # claimed
    assert "lenient %" in page and "Xie &amp; Hong 2021" in page and "paper (Table 1)" in page
    assert "<td>91.0</td><td>70.0</td><td>-21.0</td>" in page  # paper / ours / difference, CoLA k = 4
    assert "<td>94.0</td><td>70.0</td><td>-24.0</td>" in page  # the paper's 94 % pair accuracy beside the MLP's
    assert "reconstruction_scaling.png" in page


def test_dp_noise_defeats_the_attack_that_breaks_no_defence():
    """Strong DP noise (epsilon = 0.5 over the whole release) brings the k = 1 attack from ~100 % to near chance."""
    from privnlu.mechanisms.dp import calibrate

    x, y, aux = data()
    x = x / x.norm(dim=1, keepdim=True)  # within the clipping bound: clipping itself changes nothing
    cal = calibrate("gaussian", epsilon=0.5, delta=1e-5, clip=1.0, dim=32, k=1, epochs=8)
    r = reconstruction_audit(x, y, Condition("dp", 0, 1), SecretGenerator(0, warn=False), epochs=8,
                             auxiliary=Corpus([""] * len(aux), aux), config=SMALL, methods=("clique",), mechanism=cal.mechanism)
    assert r["dp"]["noise_multiplier"] > 10 and r["methods"]["clique"]["success"] <= 25


def test_least_squares_chunking_does_not_change_the_solution():
    from privnlu.attacks.reconstruction.attack import _descend

    g = torch.Generator().manual_seed(1)
    slots = torch.randint(0, 4, (50, 2), generator=g)
    mask = torch.ones(50, 2, dtype=torch.bool)
    cls = torch.zeros(50, 2, dtype=torch.long)
    same = (cls[:, :, None] == cls[:, None, :]) & mask[:, None, :] & mask[:, :, None]
    mass = torch.ones(50, 2)
    a, x0 = torch.rand(50, 12, generator=g), torch.randn(2, 4, 12, generator=g)
    big = _descend(x0, a, slots, mask, same, mass, steps=20, lr=0.05)
    small = _descend(x0, a, slots, mask, same, mass, steps=20, lr=0.05, chunk_floats=200)  # one coordinate per chunk
    assert torch.allclose(big[0], small[0], atol=1e-5) and torch.allclose(big[1], small[1], atol=1e-6)


def test_mixed_labels_have_the_tasks_width_even_when_a_class_is_absent():
    from privnlu.attacks.conditions import one_hot

    assert one_hot(torch.tensor([0, 1, 1]), 3).shape == (3, 3)  # a 3-class task whose sample lacks class 2
    assert one_hot(torch.tensor([0, 1, 1])).shape == (3, 2)  # no task given: inferred
    with pytest.raises(PrivnluError, match="0..1"):
        one_hot(torch.tensor([0, 2]), 2)
    x, y, aux = data()
    r = reconstruction_audit(x, torch.zeros_like(y), Condition("none", 0, 1), SecretGenerator(0, warn=False), epochs=8,
                             auxiliary=Corpus([""] * len(aux), aux), config=SMALL, methods=("clique",), num_labels=2)
    assert r["methods"]["clique"]["success"] >= 95


# -- attacking a user's own encoding file --------------------------------------------
def encode_file(capsys, tmp_path, tiny_model, toy_glue, *extra):
    from privnlu.cli.main import main

    out, key = tmp_path / "enc.pt", tmp_path / "key.pt"
    base = ["--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(tmp_path / "c"), "--quiet"]
    assert main(["encode", *base, "--m", "4", "--k", "2", "--encodings-per-example", "4", "--batch-size", "60", "--seed", "0",
                 "--out", str(out), "--key-out", str(key), *extra]) == 0
    capsys.readouterr()
    return base, out, key


def test_cli_attacks_a_shared_encoding_file(capsys, tmp_path, tiny_model, toy_glue):
    import json

    from privnlu.cli.main import main

    base, enc, _ = encode_file(capsys, tmp_path, tiny_model, toy_glue)
    s_out, r_out = tmp_path / "s.json", tmp_path / "r.json"
    assert main(["attack", "search", *base, "--payload", str(enc), "--out", str(s_out)]) == 0
    rec = json.loads(s_out.read_text())
    assert rec["mode"] == "payload" and rec["n_encodings"] == 240 and len(rec["answers"]) == 240
    assert rec["threat_model"]["key_material"] is False and -1 <= rec["mean_cosine"] <= 1
    full = rec["corpus_size"]
    assert main(["attack", "search", *base, "--payload", str(enc), "--corpus-limit", "20", "--out", str(s_out),
                 "--force"]) == 0
    assert json.loads(s_out.read_text())["corpus_size"] == 20 < full  # the candidate corpus is bounded
    assert "candidates: the sst2 training sentences (the first 20)" in capsys.readouterr().err
    assert main(["attack", "reconstruct", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir",
                 str(tmp_path / "c"), "--quiet", "--payload", str(enc), "--aux-size", "60", "--pairs", "2000",
                 "--sim-releases", "1", "--methods", "clique,nmf", "--out", str(r_out)]) == 0  # task from the file
    rec = json.loads(r_out.read_text())
    assert rec["task"] == "sst2" and rec["payload_meta"]["k"] == 2 and rec["payload_meta"]["epochs"] == 4
    for m in ("clique", "nmf"):
        assert rec["methods"][m]["groups"] == 60 and len(rec["methods"][m]["answers"]) == 60
        assert all(isinstance(a["sentence"], str) for a in rec["methods"][m]["answers"])


def test_cli_payload_bad_input(capsys, tmp_path, tiny_model, toy_glue):
    from privnlu.cli.main import main

    base, enc, key = encode_file(capsys, tmp_path, tiny_model, toy_glue)
    junk = tmp_path / "junk.pt"
    junk.write_text("not a tensor file")
    pickled = tmp_path / "old.pt"
    torch.save({"x": torch.zeros(3, 32), "y": torch.zeros(3, 2), "meta": {}}, pickled)  # an old-style payload
    cases = [(["--payload", str(key)], "is a pickle"), (["--payload", str(pickled)], "is a pickle"),
             (["--payload", str(junk)], "not a privnlu encoding file"),
             (["--payload", str(tmp_path / "missing.pt")], "no such file")]
    for cmd in ("search", "reconstruct"):
        for extra, match in cases:
            out = tmp_path / "o.json"
            code = main(["attack", cmd, *base, *extra, "--out", str(out)])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and match in err[-1] and not out.exists(), (cmd, extra, err)
    (tmp_path / "one").mkdir()
    _, enc1, _ = encode_file(capsys, tmp_path / "one", tiny_model, toy_glue, "--epochs", "1")
    code = main(["attack", "reconstruct", *base, "--payload", str(enc1), "--out", str(tmp_path / "o.json")])
    assert code == 2 and "too few encodings to cluster" in capsys.readouterr().err


def test_cli_reconstruct_plain_and_dp(capsys, tmp_path, tiny_model, toy_glue):
    import json

    from privnlu.cli.main import main

    base = ["--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(tmp_path / "c"),
            "--quiet", "--seed", "0", "--queries", "12", "--epochs", "4", "--aux-size", "40", "--pairs", "2000", "--sim-releases", "1"]
    out = tmp_path / "r.json"
    assert main(["attack", "reconstruct", *base, "--conditions", "0:1,1:2", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["kind"] == "attack" and rec["recipe"] is None and set(rec["conditions"]) == {"m0-k1", "m1-k2"}
    assert set(rec["conditions"]["m0-k1"]["methods"]) == {"paper-greedy", "threshold", "clique", "nmf"}
    # no defence: far above chance (1/12). With the release shuffled as a whole, this toy setting
    # (tiny random model, 12 originals) gives 75-83 % over seeds 0-4 (it gave 83-100 % in epoch order)
    assert rec["conditions"]["m0-k1"]["methods"]["nmf"]["success"] >= 70
    assert main(["attack", "reconstruct", *base, "--conditions", "16:2", "--dp-mechanism", "laplace", "--dp-epsilon", "8",
                 "--dp-calibration", "paper", "--methods", "nmf", "--out", str(out), "--force"]) == 0
    err = capsys.readouterr().err
    c = json.loads(out.read_text())["conditions"]["m16-k2"]
    assert c["dp_calibration"]["valid_dp_guarantee"] is False and "NOT a valid DP guarantee" in err
    # Algorithm 1's one noise vector per batch: the release says it is not DP, and so does the attack's log
    assert main(["attack", "reconstruct", *base, "--conditions", "1:2", "--dp-mechanism", "gaussian", "--dp-epsilon", "8",
                 "--dp-noise", "per-batch", "--methods", "nmf", "--out", str(out), "--force"]) == 0
    err = capsys.readouterr().err
    c = json.loads(out.read_text())["conditions"]["m1-k2"]
    assert c["dp_calibration"]["noise_reading"] == "per-batch" and c["dp_calibration"]["accounted_epsilon"] is None
    assert "NOT DP" in err and "--dp-calibration paper" not in err
    code = main(["attack", "reconstruct", *base, "--dp-noise", "per-batch", "--out", str(tmp_path / "x.json")])
    assert code == 2 and "--dp-noise applies to a DP release made here" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_xie2021_recipe_holds_the_papers_settings():
    from privnlu.experiments import xie2021

    from privnlu.attacks.reconstruction import sweep as rs

    assert xie2021.TABLE1_CONDITIONS == ("1:1", "1:2", "1:4", "1:6") and rs.N_PRIVATE * rs.EPOCHS == 5000
    assert [c.split(":")[0] for c in xie2021.FIGURE1_CONDITIONS] == ["1", "16", "64", "256", "1024", "4096"]
    from privnlu.experiments import xie2022

    assert xie2022.PAPER_EPSILONS == (0.1, 1, 2, 4, 8, 10, 15, 20) and xie2022.ATTACK_CONDITION == "16:4"


# -- the paper's clustering rule and pair network, strict metrics, the k-NN graph -----------------------
def planted(n_groups=8, per=30, k=2, seed=0):
    """Encodings each holding k of n_groups originals (every original in exactly k * per of them: each block of
    n_groups encodings holds every original once per slot), the membership, and a similarity in [0, 1]: high for
    pairs that share an original, plus noise."""
    g = torch.Generator().manual_seed(seed)
    N = n_groups * per
    i = torch.arange(N)
    first = i % n_groups
    slots = torch.stack([first] + [(first + s * (1 + (i // n_groups) % (n_groups // k))) % n_groups for s in range(1, k)], 1)
    member = torch.zeros(N, n_groups)
    member[torch.arange(N)[:, None], slots] = 1.0
    share = (member @ member.T > 0).float()
    prob = (0.15 + 0.6 * share + 0.2 * torch.rand(N, N, generator=g)).clamp(0, 1)
    prob = 0.5 * (prob + prob.T)
    prob.fill_diagonal_(0.0)
    return prob, member, slots


def test_paper_greedy_rule_recovers_planted_overlapping_groups():
    from privnlu.attacks.reconstruction.paper import dense_rows, paper_greedy_clusters

    prob, member, _ = planted()
    size = int(member.sum(0)[0])
    groups = paper_greedy_clusters(dense_rows(prob), len(prob), 8, 2, size)
    found = {int(member[c].sum(0).argmax()) for c in groups}
    purity = torch.stack([member[c].sum(0).max() / len(c) for c in groups]).mean()
    # a seed holds k = 2 originals, so a group can drift to the seed's other original: most, not all, are found
    assert len(groups) == 8 and len(found) >= 6 and purity > 0.8
    # the rule is the mean-similarity rule: with the similarities shuffled (no structure) the groups are not pure
    shuffled = prob[torch.randperm(len(prob), generator=torch.Generator().manual_seed(3))]
    bad = paper_greedy_clusters(dense_rows(0.5 * (shuffled + shuffled.T)), len(prob), 8, 2, size)
    assert torch.stack([member[c].sum(0).max() / len(c) for c in bad]).mean() < 0.6


def test_paper_pair_mlp_scores_all_pairs_as_the_stacked_input_and_learns_a_release():
    from privnlu.attacks.reconstruction.attack import simulate_pairs
    from privnlu.attacks.reconstruction.paper import MLPConfig, PairMLP, pair_accuracy, train_pair_mlp

    torch.manual_seed(0)
    net = PairMLP(8, (16, 4))
    x = torch.randn(25, 8)
    s = net.score_all(x, block=6)
    i, j = torch.triu_indices(25, 25, 1)
    with torch.no_grad():
        direct = 0.5 * (net.logit(x[i], x[j]) + net.logit(x[j], x[i]))  # the MLP on the stacked [a; b], both orders
    assert torch.allclose(s[i, j], direct, atol=1e-5) and torch.allclose(s, s.T)
    # trained with Adam at lr 0.01 on simulated k = 1 pairs of a small release, it separates them on a fresh release
    _, _, aux = data(d=32, n_aux=400)
    g = torch.Generator().manual_seed(0)
    cfg = ReconstructionConfig(sim_releases=2, sim_epochs=8, pairs_per_release=6000)
    a, b, y = simulate_pairs(aux, 20, 0, 1, cfg, SecretGenerator(0, warn=False), g)
    ha, hb, hy = simulate_pairs(aux, 20, 0, 1, cfg, SecretGenerator(1, warn=False), g)
    mlp = train_pair_mlp(a, b, y, MLPConfig(hidden=(64, 16), epochs=2), g)
    assert MLPConfig().lr == 0.01 and pair_accuracy(mlp.logit, ha, hb, hy) > 0.9
    chance = pair_accuracy(lambda p, q: torch.randn(len(p), generator=torch.Generator().manual_seed(2)), ha, hb, hy)
    assert chance < 0.6


def test_strict_and_sentence_success_are_no_more_lenient_than_they_should_be():
    from privnlu.attacks.reconstruction.metrics import success_rates

    g = torch.Generator().manual_seed(0)
    priv = torch.randn(10, 16, generator=g)
    member = torch.eye(10)
    clusters = [torch.tensor([i]) for i in range(10)]
    rec = priv + 0.01 * torch.randn(10, 16, generator=g)
    # distractors: near-copies of originals 0-3 (closer to their recovered vectors than the originals are)
    dis = torch.cat([rec[:4] + 1e-4 * torch.randn(4, 16, generator=g), torch.randn(50, 16, generator=g)])
    texts = [f"s{i}" for i in range(10)]
    corpus = texts + ["x"] * 5
    nearest = np.array([0, 1, 2, 3, 4, 5, 6, 7, 10, 11])  # groups 8 and 9 retrieve a wrong sentence
    s = success_rates(rec, clusters, member, priv, distractors_x=dis, sentence_index=nearest, candidate_texts=corpus,
                      private_texts=texts)
    assert s["success_lenient"] == 100.0 and s["success_strict"] == 60.0 and s["success_sentence"] == 80.0
    assert s["n_distractors"] == 54 and s["claimed"] == 100.0


def test_claimed_counts_originals_no_group_stands_for():
    from privnlu.attacks.reconstruction.metrics import success_rates

    priv = torch.eye(5)
    member = torch.eye(5)
    clusters = [torch.tensor([0]), torch.tensor([0]), torch.tensor([1]), torch.tensor([2])]  # 3, 4 unclaimed
    rec = torch.stack([priv[0], priv[3], priv[2], priv[2]])  # the second copy of 0 and group 1 solve wrongly
    s = success_rates(rec, clusters, member, priv)
    assert s["claimed"] == 60.0 and s["success_lenient"] == 40.0  # 0 and 2 recovered; 1 lost in the solve


def _release(n=24, epochs=10, k=2, seed=0):
    x, y, aux = data(n=n, d=32, n_aux=400, seed=seed)
    return x, y, aux, dict(epochs=epochs, auxiliary=Corpus([""] * len(aux), aux))


def test_sparse_graph_attack_equals_all_pairs_on_the_complete_graph():
    """Same networks, same rule: with the graph holding every pair, the sparse clustering is the dense one."""
    from privnlu.attacks.reconstruction import sparse as rs
    from privnlu.attacks.reconstruction.paper import dense_rows, paper_greedy_clusters

    prob, member, _ = planted(n_groups=6, per=20)
    lo, hi = rs.complete_graph(len(prob))
    P = rs.sym_csr(lo, hi, prob[lo, hi].numpy(), len(prob))
    size = int(member.sum(0)[0])
    dense = paper_greedy_clusters(dense_rows(prob), len(prob), 6, 2, size)
    sparse = paper_greedy_clusters(rs.csr_rows(P), len(prob), 6, 2, size)
    assert [c.tolist() for c in dense] == [c.tolist() for c in sparse]
    feats = member + 0.3 * torch.randn(member.shape, generator=torch.Generator().manual_seed(1))
    feats = feats - feats.mean(0)
    fn = torch.nn.functional.normalize(feats, dim=1)
    cos = (fn @ fn.T).clamp_min(0)
    A = rs.sym_csr(lo, hi, cos[lo, hi].numpy(), len(prob))
    d = nmf_clusters(feats, 6, size, dense, iters=40)
    s = rs.nmf_sparse(A, dense, size, iters=40, support=6)
    agree = np.mean([len(set(a.tolist()) & set(b.tolist())) / size for a, b in zip(d, s)])
    assert agree > 0.97
    logits = torch.logit(prob.clamp(1e-6, 1 - 1e-6)) + 0.01 * torch.randn(prob.shape, generator=torch.Generator().manual_seed(2))
    logits = 0.5 * (logits + logits.T)
    logits.fill_diagonal_(-math.inf)
    L = rs.sym_csr(lo, hi, logits[lo, hi].numpy(), len(prob))
    for grow in (size, int(size * 1.25)):
        want = [c.tolist() for c in clique_clusters(logits, 6, 2, size=grow)]
        assert [c.tolist() for c in rs.clique_sparse(L, 6, 2, grow)] == want


def test_sparse_clique_groups_are_cliques_of_the_graph():
    """On a graph that misses some same-group pairs, a clique group only holds pairwise neighbours."""
    from privnlu.attacks.reconstruction import sparse as rs

    truth = torch.arange(40) // 10
    g = torch.Generator().manual_seed(3)
    logits = torch.where(truth[:, None] == truth[None, :], 2.0, -2.0) + 0.2 * torch.randn(40, 40, generator=g)
    lo, hi = rs.complete_graph(40)
    keep = torch.rand(len(lo), generator=g).numpy() > 0.2  # drop 20 % of the edges
    lo, hi = lo[keep], hi[keep]
    L = rs.sym_csr(lo, hi, (0.5 * (logits + logits.T))[lo, hi].numpy(), 40)
    edges = set(zip(lo.tolist(), hi.tolist()))
    groups = rs.clique_sparse(L, 4, 1, 12)
    assert len(groups) == 4
    for c in groups:
        m = sorted(c.tolist())
        assert all((a, b) in edges for i, a in enumerate(m) for b in m[i + 1:])
        assert len(set(truth[c].tolist())) == 1 and len(m) >= 4  # pure, and not trivially small
    path = rs.sym_csr(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0], dtype=np.float32), 5)  # 3, 4: no edges
    assert [c.tolist() for c in rs.clique_sparse(path, 4, 1, 3)] == [[1, 2], [0], [3], [4]]  # 0 and 2 are no edge


def test_knn_graph_attack_agrees_with_all_pairs_attack_on_a_small_release():
    x, y, aux, kw = _release()
    cfg = ReconstructionConfig(sim_releases=2, sim_epochs=8, pairs_per_release=8000, train_epochs=2)
    from dataclasses import replace

    dense = reconstruction_audit(x, y, Condition("c", 1, 2), SecretGenerator(1, warn=False), config=cfg,
                                 methods=("paper-greedy", "nmf"), **kw)
    sparse = reconstruction_audit(x, y, Condition("c", 1, 2), SecretGenerator(1, warn=False), config=replace(cfg, graph=80),
                                  methods=("paper-greedy", "nmf"), **kw)
    assert sparse["graph_neighbours"] == 80 and sparse["pair_accuracy"]["mlp"]["release"]["edges"] < 240 * 239 / 2
    for m in ("paper-greedy", "nmf"):
        assert abs(dense["methods"][m]["success"] - sparse["methods"][m]["success"]) <= 15, m
    assert sparse["methods"]["nmf"]["success"] >= 70
    with pytest.raises(PrivnluError, match="needs all pairs"):
        reconstruction_audit(x, y, Condition("c", 1, 2), SecretGenerator(1, warn=False), config=replace(cfg, graph=80),
                             methods=("threshold",), **kw)


def test_cli_graph_refuses_all_pairs_clusterings(capsys, tmp_path):
    from privnlu.cli.main import main

    out = tmp_path / "o.json"
    code = main(["attack", "reconstruct", "--task", "sst2", "--graph", "50", "--methods", "threshold", "--out", str(out)])
    assert code == 2 and "--graph runs only paper-greedy, clique, nmf, not 'threshold'" in capsys.readouterr().err
    assert not out.exists()
    code = main(["attack", "reconstruct", "--task", "sst2", "--methods", "greedy", "--out", str(out)])
    assert code == 2 and "unknown clustering 'greedy'" in capsys.readouterr().err  # renamed: threshold / paper-greedy
    code = main(["attack", "reconstruct", "--task", "sst2", "--nmf-repair-iters", "-1", "--out", str(out)])
    assert code == 2 and "--nmf-repair-iters" in capsys.readouterr().err and not out.exists()


def test_cli_repair_rounds_reach_the_attackers_config():
    from privnlu.attacks.runs import reconstruction_config
    from privnlu.cli.main import build_parser

    args = build_parser("attack reconstruct").parse_args(["attack", "reconstruct", "--graph", "200", "--nmf-repair-rounds", "3",
                                              "--nmf-repair-iters", "40", "--out", "x.json"])
    methods, cfg = reconstruction_config(args.methods, epochs=50, graph=args.graph,
                                         nmf_repair_rounds=args.nmf_repair_rounds, nmf_repair_iters=args.nmf_repair_iters)
    assert (cfg.graph, cfg.nmf_repair_rounds, cfg.nmf_repair_iters) == (200, 3, 40) and "nmf" in methods


def test_sparse_nmf_products_on_support_are_the_full_products_on_any_number_of_threads():
    """Both nmf products, computed a block of rows at a time on 1 or 2 threads (scipy, and compiled where numba is
    installed), equal the full sparse products read at the support."""
    from privnlu.attacks.reconstruction import kernels
    from privnlu.attacks.reconstruction import sparse as rs

    rng = np.random.default_rng(0)
    n, g = 300, 12
    lo = np.repeat(np.arange(n), 8)
    hi = rng.integers(0, n, len(lo))
    keep = lo != hi
    A = rs.sym_csr(np.minimum(lo, hi)[keep], np.maximum(lo, hi)[keep], rng.random(int(keep.sum())).astype(np.float32), n)
    A = A.astype(np.float64)
    seeds = [torch.from_numpy(np.flatnonzero(rng.integers(0, g, n) == j)) for j in range(g)]
    S = rs.nmf_support(A, seeds, 5)
    H = S.copy().astype(np.float64)
    H.data[:] = rng.random(H.nnz) + 1e-3
    rows = np.repeat(np.arange(n), np.diff(S.indptr))
    cols = S.indices
    full_num, full_den = (A @ H).toarray(), (H @ (H.T @ H)).toarray()
    threads = torch.get_num_threads()
    try:
        for t in (1, 2):
            torch.set_num_threads(t)
            np.testing.assert_allclose(rs._product_on_support(A, H, rows, chunk=64), full_num[rows, cols], rtol=1e-12)
            np.testing.assert_allclose(rs._gram_on_support(H, rows, chunk=64), full_den[rows, cols], rtol=1e-12)
            if kernels.AVAILABLE:  # the compiled products, on an unsorted A too
                np.testing.assert_allclose(kernels.masked_product(A, H), full_num[rows, cols], rtol=1e-12)
                np.testing.assert_allclose(kernels.gram_product(H), full_den[rows, cols], rtol=1e-12)
                shuffled = A.copy()
                for i in range(n):
                    a, b = shuffled.indptr[i], shuffled.indptr[i + 1]
                    order = rng.permutation(b - a)
                    shuffled.indices[a:b], shuffled.data[a:b] = shuffled.indices[a:b][order], shuffled.data[a:b][order]
                np.testing.assert_allclose(kernels.masked_product(shuffled, H), full_num[rows, cols], rtol=1e-12)
    finally:
        torch.set_num_threads(threads)


def _split_seed_release():
    """10 originals x 20 near-identical encodings (k = 1); original 0 is seeded twice (split in halves) and
    original 9 not at all, as clique growth does when the pair network misses identical pairs."""
    g = torch.Generator().manual_seed(0)
    orig = torch.randn(10, 32, generator=g).abs()
    feats = orig.repeat_interleave(20, 0) + 0.05 * torch.randn(200, 32, generator=g)
    seeds = [torch.arange(0, 10), torch.arange(10, 20)] + [torch.arange(20 * i, 20 * i + 20) for i in range(1, 9)]
    return feats, torch.arange(200) // 20, seeds


def _originals(groups, truth):
    return {int(truth[c].mode().values) for c in groups}


def test_nmf_repair_reseeds_a_duplicate_group_on_the_unfound_original():
    from privnlu.attacks.reconstruction.attack import _PairGraph
    from privnlu.attacks.reconstruction.repair import duplicate_groups

    feats, truth, seeds = _split_seed_release()
    plain = nmf_clusters(feats, 10, 20, seeds, iters=150)
    assert _originals(plain, truth) == set(range(9)) and duplicate_groups(plain, 200) == [1]
    for graph, start in itertools.product((0, 40), ("seeds", "warm")):  # all pairs, and the k-NN graph (sparse nmf)
        pairs = _PairGraph(feats, {}, ReconstructionConfig(graph=graph, nmf_support=10, nmf_repair_start=start))
        groups, repaired = pairs.nmf(seeds, 20, 1)
        assert repaired == 1 and _originals(groups, truth) == set(range(10)), (graph, start)
        off = _PairGraph(feats, {}, ReconstructionConfig(graph=graph, nmf_support=10, nmf_repair_iters=0))
        assert off.nmf(seeds, 20, 1)[1] == 0


def test_nmf_repair_rounds_repeat_only_while_duplicates_remain(monkeypatch):
    from privnlu.attacks.reconstruction import repair as reconstruction_repair
    from privnlu.attacks.reconstruction.attack import _PairGraph

    feats, truth, seeds = _split_seed_release()
    calls = []
    real = reconstruction_repair.reseed_duplicates

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(len(out[1]))
        return out

    monkeypatch.setattr(reconstruction_repair, "reseed_duplicates", counted)
    groups, repaired = _PairGraph(feats, {}, ReconstructionConfig(nmf_repair_rounds=3)).nmf(seeds, 20, 1)
    assert calls == [1, 0] and repaired == 1 and _originals(groups, truth) == set(range(10))
    # two duplicates of original 0 and none of 8, 9: the first round frees both, or a later round finishes the job
    calls.clear()
    twice = [seeds[0], seeds[1], torch.arange(5, 15), *seeds[2:9]]
    groups, repaired = _PairGraph(feats, {}, ReconstructionConfig(nmf_repair_rounds=3)).nmf(twice, 20, 1)
    assert calls[-1] == 0 and repaired == sum(calls) >= 2 and _originals(groups, truth) == set(range(10))


def test_duplicate_groups_keeps_the_first_of_overlapping_groups():
    from privnlu.attacks.reconstruction.repair import duplicate_groups

    a, b, c = torch.arange(0, 10), torch.arange(5, 15), torch.arange(20, 30)
    assert duplicate_groups([a, b, c], 40) == [1]  # b shares half its members with a
    assert duplicate_groups([a, torch.arange(6, 16), c], 40) == []  # 4 of 10: below half


def test_warm_nmf_start_keeps_the_earlier_factor_except_for_fresh_groups():
    from privnlu.attacks.reconstruction import sparse as rs
    from privnlu.attacks.reconstruction.attack import nmf_start

    feats, truth, seeds = _split_seed_release()
    n = len(feats)
    earlier = torch.rand(n, len(seeds), generator=torch.Generator().manual_seed(3)) + 0.5
    H = nmf_start(n, seeds, warm=earlier, fresh=[1])
    assert torch.equal(H[:, [0, *range(2, 10)]], earlier[:, [0, *range(2, 10)]])
    assert set(torch.nonzero(H[:, 1] == 0.1).squeeze(1).tolist()) == set(seeds[1].tolist())
    assert int((H[:, 1] == 0.001).sum()) == n - len(seeds[1])
    lo, hi = rs.complete_graph(n)  # the sparse start on full support is the dense one
    A = rs.sym_csr(lo, hi, np.ones(len(lo)), n)
    Hs = rs.nmf_sparse_start(A, seeds, len(seeds), dtype=np.float64, warm=rs.sp.csr_matrix(earlier.double().numpy()), fresh=[1])
    np.testing.assert_allclose(Hs.toarray(), H.double().numpy(), rtol=1e-6)
    cold = rs.nmf_sparse_start(A, seeds, len(seeds), dtype=np.float64)
    np.testing.assert_allclose(cold.toarray(), nmf_start(n, seeds).double().numpy(), rtol=1e-6)


def test_sparse_nmf_gives_the_same_groups_with_and_without_the_compiled_products(monkeypatch):
    from privnlu.attacks.reconstruction import kernels
    from privnlu.attacks.reconstruction import sparse as rs

    if not kernels.AVAILABLE:
        pytest.skip("numba is not installed (privnlu[scale])")
    feats, truth, seeds = _split_seed_release()
    lo, hi, cos = rs.knn_graph(feats, 40)
    A = rs.sym_csr(lo, hi, np.maximum(cos, 0.0), len(feats))
    compiled = rs.nmf_sparse(A, seeds, 20, iters=60, support=10)
    monkeypatch.setattr(kernels, "AVAILABLE", False)
    plain = rs.nmf_sparse(A, seeds, 20, iters=60, support=10)
    assert [g.tolist() for g in compiled] == [g.tolist() for g in plain]


@pytest.mark.parametrize("compiled", [True, False])
def test_sparse_nmf_in_locality_order_is_the_same_update(monkeypatch, compiled):
    """Iterating on rows sorted by main group only sums in another order: the same H (float64, 1e-9) and groups,
    written back in the release's order, with or without the compiled products."""
    from privnlu.attacks.reconstruction import kernels
    from privnlu.attacks.reconstruction import sparse as rs

    if compiled and not kernels.AVAILABLE:
        pytest.skip("numba is not installed (privnlu[scale])")
    monkeypatch.setattr(kernels, "AVAILABLE", compiled and kernels.AVAILABLE)
    feats, truth, seeds = _split_seed_release()
    shuffle = torch.randperm(len(feats), generator=torch.Generator().manual_seed(3))  # a release is shuffled
    feats, inverse = feats[shuffle], torch.argsort(shuffle)
    seeds = [inverse[s] for s in seeds]
    lo, hi, cos = rs.knn_graph(feats, 40)
    A = rs.sym_csr(lo, hi, np.maximum(cos, 0.0), len(feats))
    start = rs.nmf_sparse_start(A, seeds, 10, dtype=np.float64)
    order = rs.locality_order(start)
    main = np.asarray(start.argmax(axis=1)).ravel()[order]
    assert (np.diff(main) >= 0).all() and not (order == np.arange(len(order))).all()
    plain = rs.nmf_sparse_factor(A, start.copy(), iters=60, reorder=False)
    local = rs.nmf_sparse_factor(A, start.copy(), iters=60, reorder=True)
    assert (local.indices == plain.indices).all() and (local.indptr == plain.indptr).all()
    np.testing.assert_allclose(local.data, plain.data, rtol=1e-9, atol=1e-12)
    assert [g.tolist() for g in rs.sparse_top_members(local, 20)] == [g.tolist() for g in rs.sparse_top_members(plain, 20)]
    assert not np.allclose(local.data, start.data)  # it did iterate
