"""The noise-aware reconstruction attacker against DP instance encoding: its simulated releases carry the public
mechanism's noise, it is the audit's default when a mechanism is given, and the noise-free attacker stays available."""

import pytest
import torch

from privnlu.attacks import RECONSTRUCTION_THREAT, AttackerView, Corpus
from privnlu.attacks.conditions import Condition
from privnlu.attacks.reconstruction.audit import reconstruction_audit
from privnlu.attacks.reconstruction.attack import (ReconstructionAttack, ReconstructionConfig, simulate_pairs,
                                                   simulate_release)
from privnlu.errors import PrivnluError
from privnlu.mechanisms.dp import GaussianEncoding, LaplaceEncoding
from privnlu.rng import SecretGenerator

@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one torch thread is faster than a pool (and restored afterwards)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TINY = ReconstructionConfig(sim_releases=1, sim_epochs=4, pairs_per_release=2000, train_epochs=1, ls_iters=5,
                            ls_restarts=1, nmf_iters=20, nmf_repair_iters=0)


@pytest.mark.parametrize("mech", [GaussianEncoding(clip=1.0, noise=0.7, dim=16),
                                  LaplaceEncoding(clip=1.0, noise=0.7, dim=16)], ids=["gaussian", "laplace"])
def test_simulated_releases_carry_the_mechanism_noise_at_its_scale(mech):
    """Auxiliary rows of zeros: every simulated encoding is pure noise, so its spread is the mechanism's. 30 x 20
    encodings x 16 coordinates = 9,600 draws; the standard deviation (sigma, or b sqrt(2) for the Laplace) is
    matched within 5 % (fixed seed). Noise-free simulation gives exact zeros."""
    aux = torch.zeros(50, 16)
    cfg = ReconstructionConfig(sim_epochs=20)
    gen = torch.Generator().manual_seed(0)
    payload, _ = simulate_release(aux, 30, 0, 4, cfg, SecretGenerator(0, warn=False), gen, mechanism=mech)
    sd = mech.noise * (2 ** 0.5 if mech.kind == "laplace" else 1.0)
    assert abs(float(payload.x.std()) / sd - 1) < 0.05 and abs(float(payload.x.mean())) < 0.05
    clean, _ = simulate_release(aux, 30, 0, 4, cfg, SecretGenerator(0, warn=False), gen)
    assert clean.x.abs().max() == 0
    per_batch, key = simulate_release(aux, 30, 0, 4, cfg, SecretGenerator(0, warn=False), gen, mechanism=mech,
                                      noise="per-batch")
    rows = per_batch.x[torch.argsort(key.epoch, stable=True)].view(20, 30, 16)  # one batch of 30 per pass
    assert torch.allclose(rows, rows[:, :1].expand_as(rows)) and not torch.allclose(rows[0], rows[1])


def test_noisy_simulated_pairs_are_harder_to_tell_apart():
    """With heavy noise the simulated features of positive and negative pairs move closer together (the pair network
    then trains on what it will see); noise-free pairs stay far apart."""
    torch.manual_seed(0)
    aux = torch.nn.functional.normalize(torch.randn(100, 16), dim=1)
    cfg = ReconstructionConfig(sim_releases=1, sim_epochs=6, pairs_per_release=4000)

    def gap(**kw):
        a, b, y = simulate_pairs(aux, 40, 0, 4, cfg, SecretGenerator(0, warn=False), torch.Generator().manual_seed(0), **kw)
        cos = torch.nn.functional.cosine_similarity(a, b)
        return float(cos[y == 1].mean() - cos[y == 0].mean())

    assert gap() > 3 * gap(mechanism=GaussianEncoding(clip=1.0, noise=2.0, dim=16))


def _release(noise_aware, *, mechanism=True, noise="per-encoding"):
    g = torch.Generator().manual_seed(0)
    x, aux = torch.randn(12, 16, generator=g), torch.randn(60, 16, generator=g)
    y = torch.randint(0, 2, (12,), generator=g)
    mech = GaussianEncoding(clip=1.0, noise=0.3, dim=16) if mechanism else None
    cfg = TINY if noise_aware is None else ReconstructionConfig(**{**TINY.__dict__, "noise_aware": noise_aware})
    return reconstruction_audit(x, y, Condition("dp", 0, 1), SecretGenerator(0, warn=False), epochs=4,
                                auxiliary=Corpus([""] * 60, aux), config=cfg, methods=("clique",), mechanism=mech,
                                num_labels=2, noise=noise, progress=False)


def test_the_audit_attacker_is_noise_aware_by_default_and_can_be_noise_free():
    r = _release(None)
    assert r["attacker_noise_aware"] is True and r["attacker_config"]["noise_aware"] is None
    assert r["dp_noise"] == "per-encoding"
    assert _release(False)["attacker_noise_aware"] is False
    assert _release(None, noise="per-batch")["dp_noise"] == "per-batch"
    assert "attacker_noise_aware" not in _release(None, mechanism=False)  # no DP release: nothing to be aware of


def test_a_noise_aware_attacker_needs_the_public_mechanism():
    g = torch.Generator().manual_seed(0)
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=torch.randn(24, 8, generator=g), mixed_labels=torch.ones(24, 1),
                        scheme={"m": "0", "k": 1, "epochs": 4}, auxiliary=Corpus([""] * 30, torch.randn(30, 8, generator=g)))
    attack = ReconstructionAttack(ReconstructionConfig(**{**TINY.__dict__, "noise_aware": True}), ("clique",), progress=False)
    with pytest.raises(PrivnluError, match="noise-aware attacker needs"):
        attack.run(view)


def test_cli_noise_free_attacker_needs_a_dp_release(tmp_path, capsys):
    from privnlu.cli.main import main

    assert main(["attack", "reconstruct", "--task", "sst2", "--noise-free-attacker", "--out", str(tmp_path / "r.json")]) == 2
    assert "--noise-free-attacker applies to a DP release" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
