"""Standard artefacts: a train run's model in the Hugging Face layout, its model card, and
``privnlu predict`` (CLI and ``privnlu.training.predict.load``)."""

import json
import os
import shutil
import stat

import pytest
import torch
import yaml

from conftest import toy_glue_dir, write
from privnlu.cli.main import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def env(tmp_path_factory, tiny_model):
    """A toy SST-2, a feature cache, and the common `train` arguments."""
    root = tmp_path_factory.mktemp("predict")
    glue = toy_glue_dir(root, 40)
    args = ["--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir", str(root / "cache"),
            "--quiet", "--batch-size", "8"]
    return root, args


def train(env, name, *extra):
    root, args = env
    out = root / name
    if not (out / "result.json").exists():
        assert main(["train", *args, *extra, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def baseline_run(env):
    return train(env, "baseline", "--epochs", "2", "--seed", "1")


@pytest.fixture(scope="module")
def texthide_run(env):
    return train(env, "texthide", "--scheme", "texthide", "--m", "4", "--k", "2", "--epochs", "2")


def folder_text(folder) -> str:
    """Every text file of a folder, concatenated (to look for paths and secrets)."""
    return "".join(f.read_text(errors="replace") for f in folder.rglob("*")
                   if f.is_file() and f.suffix in (".json", ".md", ".txt"))


def test_head_save_load_round_trip(tmp_path):
    from privnlu.models.heads import AbsInput, MLPHead
    from privnlu.models.saving import load_head, save_head

    x = torch.randn(7, 12)
    for head in (MLPHead(12, 3, (5, 4)), AbsInput(MLPHead(12, 1, None, dropout=0.2))):
        head.eval()
        save_head(head, tmp_path / type(head).__name__, label_names=("a", "b", "c"))
        loaded = load_head(tmp_path / type(head).__name__)
        assert type(loaded) is type(head) and torch.equal(loaded(x), head(x))
        from safetensors import safe_open

        with safe_open(str(tmp_path / type(head).__name__ / "model.safetensors"), framework="pt") as f:
            assert set(f.keys()) == set(head.state_dict())


def test_frozen_run_saves_the_head_and_predicts_exactly_as_evaluated(baseline_run):
    """Round trip: the saved head equals the trained one (the last checkpoint), and `predict` on the dev texts
    reproduces the recorded dev score exactly."""
    from privnlu.data import get_task
    from privnlu.models.saving import load_head
    from privnlu.training.predict import load

    model_dir = baseline_run / "model"
    assert (model_dir / "head" / "config.json").is_file() and (model_dir / "head" / "model.safetensors").is_file()
    assert not (model_dir / "config.json").exists()  # a frozen run does not copy the unchanged encoder
    head = load_head(model_dir / "head")
    trained = torch.load(baseline_run / "checkpoint.pt", weights_only=False)["modules"]["head"]
    assert all(torch.equal(head.state_dict()[k], v) for k, v in trained.items())
    rec = json.loads((baseline_run / "result.json").read_text())
    dev = get_task("sst2").load("dev", rec["spec"]["data_dir"])
    predictor = load(baseline_run)
    rows = predictor.predict(dev.texts_a)
    acc = 100.0 * sum(r["label_id"] == y for r, y in zip(rows, dev.labels)) / len(dev)
    assert acc == pytest.approx(rec["score"], abs=1e-9)
    assert predictor.predict(dev.texts_a) == rows  # deterministic without a privacy scheme
    assert load(model_dir).predict(dev.texts_a[:3]) == rows[:3]  # the model folder alone works too
    assert stat.S_IMODE(os.stat(model_dir / "head" / "model.safetensors").st_mode) & 0o044  # shareable, unlike the key


def test_joint_run_saves_the_encoder_in_the_hugging_face_layout(env):
    from transformers import AutoModel, AutoTokenizer

    from privnlu.data import get_task
    from privnlu.training.predict import load

    run = train(env, "joint", "--mode", "joint", "--epochs", "1")
    model_dir = run / "model"
    assert {"config.json", "model.safetensors", "README.md", "privnlu.json"} <= {f.name for f in model_dir.iterdir()}
    net = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    trained = torch.load(run / "checkpoint.pt", weights_only=False)["modules"]["encoder"]
    assert all(torch.equal(net.state_dict()[k.removeprefix("model.")], v) for k, v in trained.items()
               if k.removeprefix("model.") in net.state_dict())
    assert tok("a film")["input_ids"][0] == tok.cls_token_id
    rec = json.loads((run / "result.json").read_text())
    dev = get_task("sst2").load("dev", rec["spec"]["data_dir"])
    rows = load(run).predict(dev.texts_a)
    assert 100.0 * sum(r["label_id"] == y for r, y in zip(rows, dev.labels)) / len(dev) == pytest.approx(rec["score"])
    assert str(env[0]) not in folder_text(model_dir)  # no local path in configs, tokenizer files or card


def test_card_records_the_scheme_and_no_local_path_or_key(texthide_run, env):
    card = (texthide_run / "model" / "README.md").read_text()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["library_name"] == "privnlu" and "texthide-intra" in meta["tags"]
    assert meta["datasets"] == ["nyu-mll/glue"]
    priv = meta["privacy"]
    assert (priv["scheme"], str(priv["m"]), priv["k"], priv["mixing"]) == ("texthide", "4", 2, "intra")
    assert priv["formal_guarantee"] == "none" and priv["key_required"] and priv["leakage_measured"] is False
    metrics = meta["model-index"][0]["results"][0]["metrics"]
    rec = json.loads((texthide_run / "result.json").read_text())
    assert metrics[0]["type"] == "accuracy" and metrics[0]["value"] == pytest.approx(rec["score"] / 100, abs=1e-4)
    assert "Formal guarantee:** none" in card and "Not measured by `privnlu train`" in card and "privnlu audit" in card
    text = folder_text(texthide_run / "model")
    assert str(env[0]) not in text and "/tmp" not in text and "key.pt" not in (texthide_run / "model").iterdir().__repr__()
    from privnlu.mechanisms.texthide import MaskPool

    masks = MaskPool.load(texthide_run / "key.pt").masks
    assert json.dumps(masks.tolist()) not in text  # the pool is nowhere in the folder
    assert not any(f.name == "key.pt" for f in (texthide_run / "model").rglob("*"))


def test_dp_card_and_keyless_dp_prediction(env, capsys):
    from privnlu.training.predict import load
    from privnlu.rng import SecretGenerator

    run = train(env, "dp", "--scheme", "dp", "--m", "0", "--k", "2", "--dp-epsilon", "8", "--epochs", "1")
    meta = yaml.safe_load((run / "model" / "README.md").read_text().split("---\n")[1])
    priv = meta["privacy"]
    assert (priv["dp_mechanism"], priv["dp_target_epsilon"], priv["dp_delta"], priv["dp_calibration"]) == (
        "gaussian", 8.0, 1e-5, "correct")
    assert priv["formal_guarantee"].startswith("(epsilon, delta)-DP") and priv["dp_accounted_epsilon"] <= 8
    assert not priv["key_required"] and "differential-privacy" in meta["tags"]
    a = load(run, rng=SecretGenerator(5, warn=False)).logits(["a fine good film"] * 4)
    b = load(run, rng=SecretGenerator(5, warn=False)).logits(["a fine good film"] * 4)
    assert torch.equal(a, b) and not torch.equal(a[0], a[1])  # noisy queries, as in evaluation
    code, out, err = run_cli(capsys, "predict", "--run", str(run), "--text", "a fine good film")
    assert code == 0 and "gaussian noise" in err and json.loads(out.splitlines()[0])["prediction"] in ("0", "1")


def test_joint_dp_run_warns_and_its_card_claims_no_guarantee(env, capsys):
    """Fine-tuning the encoder on the clean private inputs voids the DP-IE guarantee (docs/design/dp-instance-encoding.md)."""
    root, args = env
    out = root / "dp-joint"
    assert main(["train", *args, "--scheme", "dp", "--m", "0", "--k", "2", "--dp-epsilon", "8", "--epochs", "1",
                 "--mode", "joint", "--out", str(out)]) == 0
    assert "gives no DP guarantee" in capsys.readouterr().err
    card = (out / "model" / "README.md").read_text()
    priv = yaml.safe_load(card.split("---\n")[1])["privacy"]
    assert priv["formal_guarantee"].startswith("none (joint mode")
    assert "**Formal guarantee:** none: the encoder was fine-tuned" in card


def test_predict_cli_end_to_end(texthide_run, tmp_path, capsys):
    inp = write(tmp_path / "in.csv", "id,review\n1,a fine good film\n2,\"a bad, dull film\"\n3,fine\n")
    out = tmp_path / "pred.jsonl"
    code, _, err = run_cli(capsys, "predict", "--run", str(texthide_run), "--input", str(inp), "--text-col", "review",
                           "--out", str(out))
    assert code == 0, err
    assert "the run folder's key.pt" in err  # says which key encodes the queries
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["text"] for r in rows] == ["a fine good film", "a bad, dull film", "fine"]
    assert all(r["prediction"] in ("0", "1") and 0.5 <= r["probability"] <= 1 for r in rows)
    before = out.read_bytes()
    code, _, err = run_cli(capsys, "predict", "--run", str(texthide_run), "--text", "x", "--out", str(out))
    assert code == 2 and "--force" in err and out.read_bytes() == before
    csv_out = tmp_path / "pred.csv"
    code, _, _ = run_cli(capsys, "predict", "--run", str(texthide_run), "--text", "good", "--text", "bad",
                         "--key", str(texthide_run / "key.pt"), "--out", str(csv_out), "--quiet")
    assert code == 0 and csv_out.read_text().splitlines()[0] == "text,prediction,label_id,probability"
    assert main(["predict", "--run", str(texthide_run), "--text", "x", "--out", str(out), "--force", "--quiet"]) == 0
    assert len(out.read_text().splitlines()) == 1


@pytest.mark.parametrize("case", ["missing", "other-run", "no-run", "no-text", "pairs"])
def test_predict_refusals_are_one_line_exit_2_and_write_nothing(case, texthide_run, env, tmp_path, capsys):
    out = tmp_path / "pred.csv"
    argv = ["predict", "--run", str(texthide_run), "--text", "a film", "--out", str(out)]
    if case == "missing":  # the model folder given to someone without the key
        shutil.copytree(texthide_run / "model", tmp_path / "shared")
        argv[2], match = str(tmp_path / "shared"), "--key"
    elif case == "other-run":
        other = train(env, "texthide-other", "--scheme", "texthide", "--m", "4", "--k", "2", "--epochs", "1")
        argv += ["--key", str(other / "key.pt")]
        capsys.readouterr()
        match = "not this run's key"
    elif case == "no-run":
        argv[2], match = str(tmp_path), "not a privnlu train run"
    elif case == "no-text":
        argv, match = argv[:3] + argv[5:], "--text"
    else:
        argv += ["--text-pair", "b"]
        match = "single texts"
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_overwrite_replaces_the_model_folder(env):
    root, args = env
    run = train(env, "overwrite", "--epochs", "1")
    first = (run / "model" / "head" / "model.safetensors").read_bytes()
    assert main(["train", *args, "--epochs", "1", "--hidden", "8", "--out", str(run), "--force"]) == 0
    assert (run / "model" / "head" / "model.safetensors").read_bytes() != first
    assert json.loads((run / "model" / "head" / "config.json").read_text())["hidden"] == [8]
    assert not [p for p in run.iterdir() if p.name.startswith(".")]  # no staging or old folder left behind


def test_predict_help_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys; from privnlu.cli.main import main; main(['predict', '--help']); "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"
