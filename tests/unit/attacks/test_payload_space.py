"""An attack on a shared file works in the file's own encoding space: the guide's chain ``privnlu encode`` ->
``privnlu attack reconstruct --payload`` with no pooling flag re-encodes the candidates with the payload's pooling,
encoder and max length, and names as many private sentences as the same attack run in-process in that space; a
conflicting flag is one line and exit code 2, before any work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from privnlu.attacks import runs
from privnlu.attacks.payload_space import payload_space
from privnlu.cli.main import main
from privnlu.errors import PrivnluError

N_PRIVATE = 20
KNOBS = dict(aux_size=40, pairs=2000, sim_releases=1)


@pytest.fixture(scope="module")
def mean_model(tiny_model, tmp_path_factory) -> Path:
    """The tiny BERT as a sentence-transformers folder whose own pooling is mean (as the packaged MiniLM's)."""
    from privnlu.models.encoder import resolve_pooling

    path = tmp_path_factory.mktemp("mean") / "bert"
    shutil.copytree(tiny_model, path)
    (path / "modules.json").write_text(json.dumps([{"idx": 1, "name": "1", "path": "1_Pooling",
                                                     "type": "sentence_transformers.models.Pooling"}]))
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    assert resolve_pooling(path, "auto") == "mean" and resolve_pooling(tiny_model, "auto") == "cls"
    return path


def _encode(tmp_path, model, toy_glue, *extra) -> tuple[list[str], Path]:
    base = ["--data-dir", str(toy_glue), "--model", str(model), "--cache-dir", str(tmp_path / "c"), "--quiet"]
    enc = tmp_path / "enc.safetensors"
    assert main(["encode", "--task", "sst2", *base, "--train-limit", str(N_PRIVATE), "--m", "4", "--k", "2",
                 "--encodings-per-example", "4", "--batch-size", str(N_PRIVATE), "--seed", "0", "--out", str(enc),
                 "--key-out", str(tmp_path / "key.pt"), *extra]) == 0
    return base, enc


def _named(answers: list[dict], toy_glue: Path) -> float:
    """Success: the share of the private sentences that the attacker's answers name."""
    rows = (toy_glue / "SST-2" / "train.tsv").read_text().splitlines()[1: N_PRIVATE + 1]
    private = {r.split("\t")[0] for r in rows}
    return 100.0 * len(private & {a["sentence"] for a in answers}) / len(private)


def test_the_guides_chain_attacks_in_the_payloads_space(capsys, tmp_path, mean_model, toy_glue):
    base, enc = _encode(tmp_path, mean_model, toy_glue)  # no pooling flag: the model's own, mean
    meta = runs.load_shared(enc).meta
    assert meta["pooling"] == "mean" and meta["max_length"] == 128 and "encoder_fingerprint" in meta
    out = tmp_path / "rec.json"
    assert main(["attack", "reconstruct", *base, "--payload", str(enc), "--methods", "clique,nmf", "--seed", "0",
                 *[f"--{k.replace('_', '-')}={v}" for k, v in KNOBS.items()], "--out", str(out)]) == 0
    cli = json.loads(out.read_text())
    assert cli["pooling"] == "mean"
    t = runs.Target(task="sst2", model=str(mean_model), pooling="mean", data_dir=str(toy_glue),
                    cache_dir=str(tmp_path / "c"), seed=0, progress=False)
    own = runs.reconstruct_payload(t, enc, "clique,nmf", **KNOBS)
    for m in ("clique", "nmf"):
        success = _named(cli["methods"][m]["answers"], toy_glue)
        assert success == _named(own["methods"][m]["answers"], toy_glue), m
        assert cli["methods"][m]["answers"] == own["methods"][m]["answers"], m
    assert max(_named(cli["methods"][m]["answers"], toy_glue) for m in ("clique", "nmf")) >= 50


def test_a_conflicting_setting_is_refused_before_any_work(capsys, tmp_path, mean_model, tiny_model, toy_glue):
    from privnlu.models.tiny import make_tiny_bert

    base, enc = _encode(tmp_path, mean_model, toy_glue)
    capsys.readouterr()
    other = make_tiny_bert(tmp_path / "other", seed=1)  # same shape, other weights
    out = tmp_path / "o.json"
    for cmd in ("search", "reconstruct"):
        for argv, match in ((["--pooling", "cls"], "--pooling cls conflicts with --payload"),
                            (["--model", str(other)], "is not the encoder of --payload")):
            args = [*base, *argv] if argv[0] == "--pooling" else [*base[:2], *argv, *base[4:]]  # --model replaced
            code = main(["attack", cmd, *args, "--payload", str(enc), "--out", str(out)])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and match in err[-1] and not out.exists(), (cmd, argv, err)
    # the payload's own value, stated, is accepted
    assert main(["attack", "search", *base, "--pooling", "mean", "--payload", str(enc), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["pooling"] == "mean"
    with pytest.raises(PrivnluError, match="conflicts"):
        runs.search_payload(runs.Target(task="sst2", model=str(mean_model), pooling="cls", data_dir=str(toy_glue)), enc)


def test_the_payloads_max_length_is_used(capsys, tmp_path, tiny_model, toy_glue):
    base, enc = _encode(tmp_path, tiny_model, toy_glue, "--max-length", "5")
    out = tmp_path / "s.json"
    assert main(["attack", "search", *base, "--payload", str(enc), "--out", str(out)]) == 0
    cli = json.loads(out.read_text())
    t = runs.Target(task="sst2", model=str(tiny_model), data_dir=str(toy_glue), cache_dir=str(tmp_path / "c"),
                    max_length=5, progress=False)
    assert cli["answers"] == runs.search_payload(t, enc)["answers"]


def test_payload_space_of_old_and_new_files(tiny_model):
    from privnlu.models.encoder import model_fingerprint

    mine = dict(path="p", model=None, pooling="auto", max_length=128, bf16="auto")
    assert payload_space({}, **mine) == {"model": None, "pooling": "auto", "max_length": 128, "bf16": "auto"}
    meta = {"pooling": "mean", "max_length": 64, "bf16": False, "encoder_fingerprint": model_fingerprint(tiny_model)}
    got = payload_space(meta, **{**mine, "model": str(tiny_model)})
    assert got == {"model": str(tiny_model), "pooling": "mean", "max_length": 64, "bf16": False}
    with pytest.raises(PrivnluError, match="--pooling cls conflicts"):
        payload_space(meta, **{**mine, "model": str(tiny_model), "pooling": "cls"})
    with pytest.raises(PrivnluError, match="not the encoder"):
        payload_space({**meta, "encoder_fingerprint": "0" * 64}, **{**mine, "model": str(tiny_model)})
