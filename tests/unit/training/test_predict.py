"""Standard artefacts: a train run's model in the Hugging Face layout, its model card, and
``privnlu predict`` (CLI and ``privnlu.model_folder.predict.load``)."""

import json
import os
import shutil
import stat

import pytest
import torch
import yaml

from conftest import checkpoint_tensors, toy_glue_dir, train_once, write
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
    return train_once(env, name, *extra)


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


def test_frozen_run_saves_the_head_and_predicts_exactly_as_evaluated(baseline_run, env):
    """Round trip: the saved head equals the trained one (the last checkpoint), and `predict` on the dev texts
    reproduces the recorded dev score exactly."""
    from privnlu.data import get_task
    from privnlu.models.saving import load_head
    from privnlu.model_folder.predict import load

    model_dir = baseline_run / "model"
    assert (model_dir / "head" / "config.json").is_file() and (model_dir / "head" / "model.safetensors").is_file()
    assert not (model_dir / "encoder").exists()  # a frozen run does not copy the unchanged encoder
    head = load_head(model_dir / "head")
    trained = checkpoint_tensors(baseline_run, "modules.head")
    assert all(torch.equal(head.state_dict()[k], v) for k, v in trained.items())
    rec = json.loads((baseline_run / "result.json").read_text())
    dev = get_task("sst2").load("dev", str(env[0] / "glue"))  # result.json names no local path
    predictor = load(baseline_run)
    rows = predictor.predict(dev.texts_a)
    acc = 100.0 * sum(r["label_id"] == y for r, y in zip(rows, dev.labels)) / len(dev)
    assert acc == pytest.approx(rec["score"], abs=1e-9)
    assert predictor.predict(dev.texts_a) == rows  # deterministic without a privacy scheme
    assert load(model_dir).predict(dev.texts_a[:3]) == rows[:3]  # the model folder alone works too
    assert stat.S_IMODE(os.stat(model_dir / "head" / "model.safetensors").st_mode) & 0o044  # shareable, unlike the key


def test_the_public_api_loads_and_predicts_as_the_loader(baseline_run):
    """``privnlu.predict.load`` (the name a model folder's config points transformers users to) is the loader, and
    ``privnlu.predict`` answers as it does; ``samples`` reaches the loader."""
    import privnlu
    from privnlu.model_folder.predict import load

    texts = ["a gripping film", "dull and long"]
    assert privnlu.predict.load.__name__ == "load"
    model = privnlu.predict.load(baseline_run)
    assert type(model) is type(load(baseline_run)) and model.predict(texts) == load(baseline_run).predict(texts)
    assert privnlu.predict(baseline_run, texts) == model.predict(texts)
    assert [r["label_id"] for r in privnlu.predict(baseline_run, texts, samples=3)] == [r["label_id"] for r in model.predict(texts)]


def test_joint_run_saves_the_encoder_in_the_hugging_face_layout(env):
    from transformers import AutoModel, AutoTokenizer

    from privnlu.data import get_task
    from privnlu.model_folder.predict import load

    run = train(env, "joint", "--mode", "joint", "--epochs", "1")
    model_dir = run / "model"
    assert {"config.json", "README.md", "privnlu.json"} <= {f.name for f in model_dir.iterdir()}
    assert (model_dir / "encoder" / "model.safetensors").is_file()
    net = AutoModel.from_pretrained(str(model_dir / "encoder"), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(str(model_dir / "encoder"), local_files_only=True)
    trained = checkpoint_tensors(run, "modules.encoder")
    assert all(torch.equal(net.state_dict()[k.removeprefix("model.")], v) for k, v in trained.items()
               if k.removeprefix("model.") in net.state_dict())
    assert tok("a film")["input_ids"][0] == tok.cls_token_id
    rec = json.loads((run / "result.json").read_text())
    dev = get_task("sst2").load("dev", str(env[0] / "glue"))  # result.json names no local path
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
    assert metrics[0]["type"] == "accuracy" and metrics[0]["value"] == pytest.approx(rec["score"], abs=1e-2)  # percent
    assert "Formal guarantee:** none" in card and "Not measured by `privnlu train`" in card and "privnlu audit" in card
    text = folder_text(texthide_run / "model")
    assert str(env[0]) not in text and "/tmp" not in text and "key.pt" not in (texthide_run / "model").iterdir().__repr__()
    from privnlu.mechanisms.texthide import MaskPool

    masks = MaskPool.load(texthide_run / "key.pt").masks
    assert json.dumps(masks.tolist()) not in text  # the pool is nowhere in the folder
    assert not any(f.name == "key.pt" for f in (texthide_run / "model").rglob("*"))


def test_dp_card_and_keyless_dp_prediction(env, capsys):
    from privnlu.model_folder.predict import load
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
    assert torch.equal(a, b) and not torch.equal(a[0], a[1])  # one noisy encoding a query, as in evaluation
    model = load(run)
    assert model.predict(["a fine good film"] * 2) == model.predict(["a fine good film"] * 2)[::-1]
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


HOSTILE = ['q" onerror="alert(9)" x="', "a\nb: [c]", "<img src=x onerror=alert(1)>", "x\n---\nevil: true"]


@pytest.mark.parametrize("name", HOSTILE)
def test_card_of_a_hostile_task_name_is_valid_yaml_and_plain_markdown(texthide_run, name):
    from privnlu.model_folder.card import model_card

    pipeline = json.loads((texthide_run / "model" / "privnlu.json").read_text())
    record = json.loads((texthide_run / "result.json").read_text())
    pipeline["task"]["name"] = pipeline["label"] = record["task"] = name
    card = model_card(pipeline, record)
    assert card.startswith("---\n")
    header, body = card[4:].split("\n---\n", 1)
    meta = yaml.safe_load(header)
    assert meta["model-index"][0]["name"] == name and meta["model-index"][0]["results"][0]["dataset"]["name"] == name
    assert set(meta) >= {"library_name", "tags", "privacy"} and "evil" not in meta
    assert name not in body and "<img" not in body and 'onerror="' not in body  # no raw markup
    heading = next(line for line in body.splitlines() if line.startswith("# "))
    assert heading.count("\n") == 0 and "<" not in heading and '"' not in heading


def test_card_wording_units_and_majority_class(texthide_run):
    from privnlu.model_folder.card import model_card

    pipeline = json.loads((texthide_run / "model" / "privnlu.json").read_text())
    record = json.loads((texthide_run / "result.json").read_text())
    record["spec"]["train"]["epochs"] = 1
    record["eval"] = {"dev": {"accuracy": 0.7564, "score": 75.64}}
    record["score"], record["best_score"] = 75.64, 78.11
    record["majority"] = {"score": 50.0, "accuracy": 50.0}
    card = model_card(pipeline, record)
    assert "1 epoch," in card and "1 epochs" not in card
    assert "gradient-attack" not in card and "privnlu attack " in card
    assert "accuracy 75.64" in card and "78.11" in card and "0.7564" not in card  # percent everywhere
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["model-index"][0]["results"][0]["metrics"][0]["value"] == 75.64
    assert meta["useful_utility"] is True and "No useful utility" not in card
    record["majority"] = {"score": 75.64}
    card = model_card(pipeline, record)
    assert "**No useful utility:**" in card and yaml.safe_load(card.split("---\n")[1])["useful_utility"] is False
    assert "averages the head's probabilities over the whole pool's masks" in card  # the query transform


def test_a_train_record_carries_its_majority_class_score(texthide_run):
    rec = json.loads((texthide_run / "result.json").read_text())
    assert rec["majority"]["score"] == pytest.approx(50.0)  # the toy dev set is balanced
