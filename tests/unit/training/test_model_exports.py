"""Standard artefacts beyond `privnlu train`: the model folders of `dchi finetune`, `dchi
pretrain` and `federated`, their cards, and `privnlu predict` on them."""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch
import yaml

from conftest import checkpoint_tensors, toy_glue_dir
from privnlu.cli.main import main


def card_meta(folder) -> dict:
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def folder_text(folder) -> str:
    """Every text file of a folder, concatenated (to look for local paths)."""
    return "".join(f.read_text(errors="replace") for f in folder.rglob("*")
                   if f.is_file() and f.suffix in (".json", ".md", ".txt"))


def assert_shareable(folder) -> None:
    """Ordinary modes (readable by others) and no key file."""
    for f in [folder, *folder.rglob("*")]:
        assert stat.S_IMODE(os.stat(f).st_mode) & 0o044, f
        assert f.suffix != ".pt", f


def dev_accuracy(rows, labels) -> float:
    return 100.0 * sum(r["label_id"] == y for r, y in zip(rows, labels)) / len(labels)


# -- dchi finetune -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dchi_out(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("dchi")
    glue = toy_glue_dir(root, 32)
    out = root / "runs"
    argv = ["dchi", "finetune", "--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model),
            "--schemes", "none,dchi-text,dchi-token,dchi-sequence", "--encoders", "transformer,bilstm", "--etas", "30", "--epochs", "1",
            "--max-length", "16", "--lstm-hidden", "8", "--batch-size", "8", "--seed", "0", "--out", str(out),
            "--quiet"]
    assert main(argv) == 0
    return root, glue, out


def test_dchi_finetune_writes_a_model_folder_per_run(dchi_out, tiny_model):
    from transformers import AutoModel, AutoTokenizer

    root, _, out = dchi_out
    stems = sorted(p.stem for p in out.glob("finetune_*.json"))
    assert len(stems) == 7  # 4 transformer modes, 3 BiLSTM modes
    for stem in stems:
        folder = out / stem
        assert (folder / "privnlu.json").is_file() and (folder / "head" / "model.safetensors").is_file()
        assert json.loads((out / f"{stem}.json").read_text())["model_dir"] == stem
        assert str(root) not in folder_text(folder) and str(tiny_model) not in folder_text(folder)
        assert_shareable(folder)
    # a transformer body loads with transformers, and equals the base model's architecture
    token = out / "finetune_sst2_transformer_token_eta30"
    net = AutoModel.from_pretrained(str(token / "encoder"), local_files_only=True)
    base = AutoModel.from_pretrained(str(tiny_model), local_files_only=True)
    assert type(net) is type(base)
    # token mode: the user-side table is frozen, so the saved body keeps the base embeddings
    assert torch.equal(net.get_input_embeddings().weight, base.get_input_embeddings().weight)
    assert AutoTokenizer.from_pretrained(str(token / "encoder"), local_files_only=True)("a film")["input_ids"][0] == 101
    assert not (out / "finetune_sst2_transformer_sequence_eta30" / "encoder").exists()  # base not copied
    assert (out / "finetune_sst2_bilstm_text_eta30" / "bilstm" / "model.safetensors").is_file()


@pytest.mark.parametrize("mode", ["text", "sequence", "null"])
def test_dchi_card_records_mechanism_eta_guarantee_and_score(dchi_out, mode):
    _, _, out = dchi_out
    stem = f"finetune_sst2_transformer_{mode}" + ("" if mode == "null" else "_eta30")
    meta = card_meta(out / stem)
    rec = json.loads((out / f"{stem}.json").read_text())
    priv = meta["privacy"]
    assert priv["mode"] == mode and priv["key_required"] is False and priv["leakage_measured"] is False
    assert priv["epsilon_delta_dp"] is False
    metrics = meta["model-index"][0]["results"][0]["metrics"]
    assert metrics[0]["type"] == "accuracy" and metrics[0]["value"] == pytest.approx(rec["score"], abs=1e-2)
    card = (out / stem / "README.md").read_text()
    if mode == "null":
        assert priv["scheme"] == "none" and priv["eta"] is None and "Formal guarantee:** none" in card
    else:
        assert priv["scheme"] == f"dchi-{mode}" and priv["eta"] == 30.0
        assert priv["mechanism"] == {"text": "M_txt", "sequence": "M_seq"}[mode]
        unit = "sequence" if mode == "sequence" else "token"
        assert priv["formal_guarantee"] == f"eta * d_chi-privacy per {unit}"
        assert f"per {unit}: eta * d(x, x')" in card and "not an (epsilon, delta)-DP guarantee" in card


def test_predict_on_a_dchi_null_run_reproduces_its_dev_score(dchi_out):
    """Null mode is deterministic: predict (clean token ids, the same scoring code) gives the recorded score."""
    from privnlu.data import get_task
    from privnlu.model_folder.predict import DchiPredictor, load

    _, glue, out = dchi_out
    dev = get_task("sst2").load("dev", str(glue))
    for enc in ("transformer", "bilstm"):
        rec = json.loads((out / f"finetune_sst2_{enc}_null.json").read_text())
        p = load(out / f"finetune_sst2_{enc}_null")
        assert isinstance(p, DchiPredictor) and "clean token ids" in p.describe()
        assert dev_accuracy(p.predict(dev.texts_a), dev.labels) == pytest.approx(rec["score"], abs=1e-9)


@pytest.mark.parametrize("stem", ["finetune_sst2_transformer_text_eta30", "finetune_sst2_transformer_token_eta30",
                                  "finetune_sst2_transformer_sequence_eta30", "finetune_sst2_bilstm_text_eta30"])
def test_predict_privatizes_dchi_queries_as_the_dev_set_was(dchi_out, stem, capsys):
    from privnlu.model_folder.predict import load
    from privnlu.rng import SecretGenerator

    _, _, out = dchi_out
    texts = ["a fine good film number 3"] * 6
    a = load(out / stem, rng=SecretGenerator(4, warn=False)).logits(texts)
    b = load(out / stem, rng=SecretGenerator(4, warn=False)).logits(texts)
    assert a.shape == (6, 2) and torch.equal(a, b)
    assert not all(torch.equal(a[0], a[i]) for i in range(1, 6))  # fresh noise per query
    # the CLI takes the model folder, or the run's result JSON
    code = main(["predict", "--run", str(out / f"{stem}.json"), "--text", "a fine good film"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert "eta = 30" in cap.err and json.loads(cap.out.splitlines()[0])["prediction"] in ("0", "1")
    assert main(["predict", "--run", str(out / stem), "--text", "x", "--key", str(out / "k.pt")]) == 2
    assert "no key" in capsys.readouterr().err


def test_dchi_text_mode_needs_the_base_encoder_when_moved(dchi_out, tmp_path, tiny_model, capsys):
    """Text mode privatizes with the user-side (base) table, which is named, not copied: a folder copied away
    from its run needs --model for a local base encoder (checked by fingerprint)."""
    import shutil

    _, _, out = dchi_out
    shutil.copytree(out / "finetune_sst2_transformer_text_eta30", tmp_path / "shared")
    code = main(["predict", "--run", str(tmp_path / "shared"), "--text", "a film"])
    err = capsys.readouterr().err
    assert code == 2 and "--model" in err and len(err.strip().splitlines()) == 1
    assert main(["predict", "--run", str(tmp_path / "shared"), "--text", "a film", "--model", str(tiny_model),
                 "--quiet"]) == 0


# -- dchi pretrain ---------------------------------------------------------------------------------------------------

def test_dchi_pretrain_encoder_is_hf_loadable_with_a_card(tiny_model, tmp_path):
    from transformers import AutoModel

    from privnlu.training import mlm

    corpus = [f"the film number {i} was fine and good" for i in range(40)]
    config = mlm.PretrainConfig(objective="denoising", eta=30.0, steps=2, warmup_steps=2, batch_size=4, max_length=16,
                                eval_size=8, checkpoint_every=2, seed=0)
    out = tmp_path / "pt"
    rec = mlm.Pretrainer(config, out, model=tiny_model, texts=corpus).run()
    enc = out / "encoder"
    net = AutoModel.from_pretrained(str(enc), local_files_only=True)
    assert net.config.hidden_size == 32 and (enc / "model.safetensors").is_file()
    for name in ("config.json", "tokenizer_config.json"):
        cfg = json.loads((enc / name).read_text())
        assert "_name_or_path" not in cfg and "name_or_path" not in cfg
    assert str(tmp_path) not in folder_text(enc) and str(tiny_model) not in folder_text(enc)
    assert_shareable(enc)
    meta = card_meta(enc)
    assert meta["library_name"] == "transformers" and meta["pipeline_tag"] == "feature-extraction"
    priv = meta["privacy"]
    assert (priv["scheme"], priv["objective"], priv["eta"], priv["mechanism"], priv["steps"]) == (
        "dchi-text", "denoising", 30.0, "M_txt", 2)
    assert priv["masked_accuracy_percent"]["private_after_adapt"] == pytest.approx(
        100 * rec["evals"]["private_after_adapt"], abs=1e-2)  # percent, as every score in a card
    assert not (enc / "privnlu.json").exists()  # a base encoder, not an applicable model


# -- federated ---------------------------------------------------------------------------------------------------------

@pytest.fixture()
def _flower_task_identity():
    from federated_helpers import ensure_task_identity

    ensure_task_identity()


@pytest.mark.parametrize("mode", ["frozen", "joint"])
def test_federated_run_exports_its_global_model_and_predict_applies_it(tiny_model, tmp_path, mode,
                                                                      _flower_task_identity):
    from federated_helpers import InProcessGrid
    from privnlu.data import get_task
    from privnlu.federated.client import make_client_app
    from privnlu.federated.config import FederatedConfig
    from privnlu.federated.server import run_server
    from privnlu.model_folder.predict import load

    cfg = FederatedConfig(task="tweets", model=str(tiny_model), clients=2, rounds=2, m="4", k=2, batch_size=8,
                          train_limit=40, dev_limit=20, cache_dir=str(tmp_path / "cache"), seed=3, dropout=0.0,
                          lr=5e-3, mode=mode, **({"dp_clip": 1.0, "dp_epsilon": 8.0} if mode == "frozen" else {}))
    out = tmp_path / "run"
    rec = run_server(InProcessGrid(make_client_app(cfg), cfg.clients), cfg, out=out)
    model_dir = out / "model"
    assert json.loads((out / "result.json").read_text())["model_dir"] == "model"
    assert_shareable(model_dir)
    assert str(tmp_path) not in folder_text(model_dir) and str(tiny_model) not in folder_text(model_dir)
    meta = card_meta(model_dir)
    priv = meta["privacy"]
    assert (priv["scheme"], str(priv["m"]), priv["k"], priv["clients"], priv["rounds"], priv["algorithm"]) == (
        "texthide", "4", 2, 2, 2, "fedsgd")
    assert priv["key_required"] is False and priv["secagg"] is False
    card = (model_dir / "README.md").read_text()
    if mode == "frozen":
        assert priv["formal_guarantee"] == "(epsilon, delta)-DP per client" and priv["dp_unit"] == "client"
        assert priv["dp_fedsgd_epsilon"] == pytest.approx(rec["dp"]["epsilon"], abs=1e-4) and "per client" in card
        assert not (model_dir / "encoder").exists()
    else:
        from transformers import AutoModel

        assert priv["formal_guarantee"] == "none" and "Formal guarantee:** none: TextHide" in card
        net = AutoModel.from_pretrained(str(model_dir / "encoder"), local_files_only=True)
        trained = checkpoint_tensors(out, "params")
        name = next(n for n in trained if n.startswith("encoder.model.encoder.layer.0"))
        assert torch.allclose(net.state_dict()[name.removeprefix("encoder.model.")], trained[name])
    # predict applies it as the server evaluated: unmasked, no key; it reproduces the server's dev score
    dev = get_task("tweets").load("dev", None).head(20)
    p = load(out, model=tiny_model if mode == "frozen" else None)  # result.json names no local path
    assert "federated server" in p.describe()
    assert dev_accuracy(p.predict(dev.texts_a), dev.labels) == pytest.approx(rec["server_score"], abs=1e-9)
