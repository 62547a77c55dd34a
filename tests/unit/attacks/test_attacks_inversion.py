"""Representation reconstruction (MLP inversion) and `privnlu attack invert`."""

import json

import pytest
import torch

from privnlu.attacks import AttackerView, Corpus
from privnlu.attacks.conditions import Condition
from privnlu.attacks.representation.audit import inversion_audit
from privnlu.attacks.representation.inversion import InversionConfig, RepresentationInversion, fit_inverse
from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.rng import SecretGenerator
from test_attacks_search import attack_args


def test_fit_inverse_learns_a_fixed_sign_mask():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1500, 16, generator=g)
    mask = torch.where(torch.rand(16, generator=g) < 0.5, -1.0, 1.0)
    net, losses = fit_inverse(x * mask, x, InversionConfig(hidden=(64,), epochs=8, batch_size=32))
    assert losses[-1] < 0.1 * losses[0]
    xt = torch.randn(100, 16, generator=g)
    assert torch.nn.functional.cosine_similarity(net(xt * mask), xt).mean() > 0.95


def test_inversion_breaks_a_single_mask_that_defeats_plain_search():
    g = torch.Generator().manual_seed(2)
    train_x, dev_x = torch.randn(3000, 24, generator=g), torch.randn(200, 24, generator=g)
    dev = Corpus([f"d{i}" for i in range(200)], dev_x, torch.arange(200) % 2)
    cfg = InversionConfig(hidden=(128,), epochs=10)
    res = inversion_audit(train_x, torch.arange(3000) % 2, dev, torch.arange(100), (Condition("m1", 1, 1),),
                          SecretGenerator(0, warn=False), embed=None, config=cfg)
    assert res["m1"]["metrics"]["identity"] > 90 and res["m1"]["cosine_to_truth"] > 0.9
    # the same release without the learned inverse: a mask sends plain search to chance
    from privnlu.attacks.representation.audit import search_audit

    plain = search_audit(dev, torch.arange(100), (Condition("m1", 1, 1),), SecretGenerator(0, warn=False), embed=None)
    assert plain["m1"]["metrics"]["identity"] < 10


def test_inversion_needs_known_pairs_grant():
    x = torch.randn(4, 3)
    from privnlu.attacks import SEARCH_THREAT

    view = AttackerView(SEARCH_THREAT, encodings=x, candidates=Corpus(list("abcd"), x))
    with pytest.raises(PrivnluError, match="known_pairs"):
        RepresentationInversion().run(view)
    with pytest.raises(PrivnluError, match="must be positive"):
        InversionConfig(epochs=0)


def test_cli_attack_invert(capsys, tmp_path, tiny_model, toy_glue):  # noqa: F811
    out = tmp_path / "inv.json"
    code = main(["attack", "invert", *attack_args(tiny_model, toy_glue, tmp_path), "--queries", "20", "--hidden", "32",
                 "--inv-epochs", "2", "--conditions", "baseline,texthide", "--out", str(out)])
    assert code == 0
    rec = json.loads(out.read_text())
    assert rec["kind"] == "attack" and rec["attack"] == "invert" and "known_pairs" in rec["threat_model"]["grants"]
    assert len(rec["conditions"]["texthide"]["train_loss"]) == 2
    code = main(["attack", "invert", *attack_args(tiny_model, toy_glue, tmp_path), "--queries", "20", "--hidden", "x",
                 "--out", str(tmp_path / "bad.json")])
    assert code == 2 and not (tmp_path / "bad.json").exists()
