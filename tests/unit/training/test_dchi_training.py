"""Privacy-constrained fine-tuning (Qu et al. 2021, section 3.3): the four modes, both encoders, on a tiny slice."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.rng import SecretGenerator
from privnlu.training import private_finetune as pf

CASES = [("transformer", m) for m in pf.MODES] + [("bilstm", m) for m in ("null", "token", "text")]


@pytest.fixture(scope="module")
def prep(tiny_model, tmp_path_factory):
    from conftest import toy_glue_dir

    glue = toy_glue_dir(tmp_path_factory.mktemp("glue"), 48)
    return pf.prepare("sst2", model=tiny_model, data_dir=str(glue), max_length=16, sequence_features=True)


def _config(encoder: str, mode: str, **kw) -> pf.FinetuneConfig:
    return pf.FinetuneConfig(mode=mode, encoder=encoder, eta=None if mode == "null" else 20.0, batch_size=8,
                             **{"epochs": 1, "lstm_hidden": 16, "seed": 0, **kw})


@pytest.mark.parametrize("encoder,mode", CASES)
def test_mode_end_to_end_and_user_side_frozen(prep, encoder, mode):
    table = prep.space.embeddings.clone()
    user_encoder = {k: v.clone() for k, v in prep.encoder.model.state_dict().items()}
    res = pf.finetune(prep, _config(encoder, mode, epochs=2), rng=SecretGenerator(0, warn=False))
    rec = res.record
    assert rec["kind"] == "dchi_finetune" and rec["mode"] == mode and rec["encoder"] == encoder
    assert len(rec["history"]) == 2 and 0 <= rec["score"] <= 100
    assert rec["train_size"] == 48 and rec["dev_size"] == 24
    counts = np.bincount(np.asarray(prep.dev.labels)) / 24  # the floor the report prints beside the score
    assert rec["majority"]["accuracy"] == pytest.approx(100 * counts[np.bincount(prep.train.labels).argmax()])
    # the user side is never touched
    assert torch.equal(prep.space.embeddings, table)
    assert all(torch.equal(v, user_encoder[k]) for k, v in prep.encoder.model.state_dict().items())
    if mode == "sequence":
        return
    provider_table = res.model.body.get_input_embeddings().weight
    moved = not torch.allclose(provider_table, table)
    # token mode: the provider's phi is the user's, frozen; null/text: the provider fine-tunes its own copy
    assert moved == (mode != "token")


def test_bilstm_learns_the_separable_toy_task(prep):
    rec = pf.finetune(prep, _config("bilstm", "null", epochs=6, lstm_hidden=32, lstm_lr=1e-2, head_lr=1e-2), rng=SecretGenerator(0, warn=False)).record
    assert rec["score"] >= 90.0, rec["history"]


@pytest.mark.parametrize("encoder", ["transformer", "bilstm"])
def test_seed_fixes_initialisation_and_dropout(prep, encoder):
    """A seeded run is repeatable end to end (noise, order, classifier init, dropout); the global RNG is untouched."""
    def run(seed):
        return pf.finetune(prep, _config(encoder, "text", seed=seed), rng=SecretGenerator(0, warn=False)).model

    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a, b, c = run(0), run(0), run(1)
    assert torch.equal(torch.rand(3), before)  # seeded blocks restore the global state
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.out.weight, c.out.weight)


def test_payloads(prep):
    rng = SecretGenerator(1, warn=False)
    pad_id = prep.encoder.tokenizer.pad_token_id
    reps = pf.privatize_split(prep.dev, "token", prep.space, 20.0, rng, pad_id)
    for ids, emb in zip(prep.dev.ids, reps):
        assert emb.shape == (len(ids), prep.space.dim)
        special = prep.space.special[ids]
        assert torch.equal(emb[special], prep.space.embeddings[ids[special]])  # [CLS]/[SEP] clean
        assert not torch.allclose(emb[~special], prep.space.embeddings[ids[~special]])
    same = pf.privatize_split(prep.dev, "text", prep.space, 1e7, rng, pad_id)
    assert all(torch.equal(a, b) for a, b in zip(same, prep.dev.ids))
    seq = pf.privatize_split(prep.dev, "sequence", prep.space, 20.0, rng, pad_id)
    assert torch.stack(seq).shape == prep.dev.features.shape


@pytest.mark.parametrize("kw,msg", [
    (dict(mode="bogus"), "unknown mode"),
    (dict(mode="token", encoder="cnn", eta=1.0), "unknown encoder"),
    (dict(mode="token"), "needs an eta"),
    (dict(mode="null", eta=5.0), "takes no eta"),
    (dict(mode="text", eta=0.0), "eta"),
    (dict(mode="sequence", encoder="bilstm", eta=5.0), "pretrained user-side encoder"),
    (dict(mode="token", eta=5.0, lr=-1.0), "learning rate"),
])
def test_config_refuses_bad_input(kw, msg):
    with pytest.raises(PrivnluError, match=msg):
        pf.FinetuneConfig(**kw)


def test_cli_finetune_writes_and_skips(tiny_model, toy_glue, tmp_path, capsys):
    out = tmp_path / "runs"
    argv = ["dchi", "finetune", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model),
            "--schemes", "none,dchi-token", "--encoders", "transformer,bilstm", "--etas", "30", "--epochs", "1",
            "--max-length", "16", "--lstm-hidden", "8", "--train-limit", "16", "--dev-limit", "8", "--seed", "0",
            "--out", str(out)]
    assert main(argv) == 0
    files = sorted(p.name for p in out.glob("*.json"))
    assert files == ["finetune_sst2_bilstm_null.json", "finetune_sst2_bilstm_token_eta30.json",
                     "finetune_sst2_transformer_null.json", "finetune_sst2_transformer_token_eta30.json"]
    rec = json.loads((out / files[-1]).read_text())
    assert rec["eta"] == 30.0 and rec["train_size"] == 16
    capsys.readouterr()
    assert main(argv) == 0
    assert "already have results" in capsys.readouterr().err
    # the report draws the utility-vs-eta frontier from these records
    from privnlu.report import build_report, markdown_report

    page = build_report([out], tmp_path / "report").read_text()
    assert 'id="dchi_finetune"' in page and (tmp_path / "report" / "dchi_finetune.png").is_file()
    assert "| sst2 |  | bilstm | token | 30 | 16 | 8 | 1 |" in markdown_report([out])


@pytest.mark.parametrize("extra,msg", [
    (["--etas", "0"], "--etas: '0' is out of range"),
    (["--etas=-3,5"], "--etas: '-3,5' is out of range"),
    (["--schemes", "dchi-token,nope"], "unknown scheme 'nope'"),
    (["--schemes", "texthide"], "runs the schemes none, dchi-sequence"),
    (["--schemes", "dchi-sequence", "--encoders", "bilstm"], "nothing to run"),
    (["--max-length", "2"], "max-length"),
])
def test_cli_finetune_bad_input_exit_2(tiny_model, toy_glue, tmp_path, capsys, extra, msg):
    argv = ["dchi", "finetune", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model),
            "--out", str(tmp_path / "o"), *extra]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*.json"))
