"""Report pages are built from autoescaped templates: names and text from records or data never become markup,
and file names derived from them are safe (``privnlu.io.safe_filename``)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HOSTILE_TASK = 'q" onerror="alert(9)" x="'
HOSTILE_TEXT = "<script>alert(1)</script>"


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of its <h1>/<title>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Tags:
    p = Tags()
    p.feed(page)
    p.close()
    return p


def assert_inert(page: str, folder: Path) -> Tags:
    """No script tag, no event-handler attribute, every image a plain file beside the page."""
    p = parse(page)
    assert not [t for t, _ in p.tags if t == "script"]
    assert not [(t, a) for t, a in p.tags for k in a if k.startswith("on")]
    assert not re.search(r"<\s*script", page, re.I)  # every "<" of the data is escaped: a raw "<" opens a real tag
    unquoted = re.sub(r'="[^"]*"', '=""', page)  # attribute values (their quotes are escaped inside) blanked
    assert not re.search(r"<[^>]*\sonerror\s*=", unquoted, re.I)  # no tag carries an event handler
    imgs = [a["src"] for t, a in p.tags if t == "img"]
    for src in imgs:
        assert src and "/" not in src and '"' not in src and (folder / src).is_file(), src
    allowed = {"src", "alt", "class", "id", "href", "lang", "charset", "name", "content"}
    assert {k for _, a in p.tags for k in a} <= allowed  # no attribute a value broke out into
    return p


def _audit_point(task: str, scheme: str, title: str, rate: float, text: str) -> dict:
    return {"kind": "audit", "task": task, "mode": "frozen", "metric": "accuracy", "scheme": scheme,
            "scheme_title": title, "setting": text if scheme != "none" else "", "utility": 70.0 - rate / 10,
            "n_train": 100, "seconds": 1.0, "random_guess_reid": 4.76, "chance_utility": 50.0, "own_leakage": {},
            "guarantee": {"kind": "none", "text": text},
            "reid": {"rate": rate, "identified": int(rate), "n_private": 100, "ci95": [0.0, 100.0],
                     "attack": "search", "candidates": 2100, "distractors": 2000},
            "examples": [{"private": text, "released": text + " | released\nline", "recovered": text}]}


def _train_run(task: str, group: str, text: str) -> dict:
    """A committed training record (with a learning curve: its section draws a figure named after the task), forged."""
    rec = json.loads((ROOT / "results" / "huang2020" / "figure2-frozen" / "sst2-texthide-intra-m0-k4-frozen.json")
                     .read_text(encoding="utf-8"))
    return {**rec, "task": task, "group": group, "label": text}


@pytest.fixture()
def unchecked(monkeypatch):
    """The loader's record validation switched off: the page must be safe on its own, whatever a record holds."""
    from privnlu.report import builder

    monkeypatch.setattr(builder, "check_record", lambda r, file=None: r, raising=False)


def _write(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(records):
        (folder / f"{i}.json").write_text(json.dumps(r), encoding="utf-8")
    return folder


def test_hostile_text_in_valid_records_is_shown_as_text(tmp_path):
    from privnlu.report import build_report

    recs = [_audit_point("tweets", "none", "no privacy", 90.0, HOSTILE_TEXT),
            _audit_point("tweets", "dp-ie", HOSTILE_TEXT, 5.0, HOSTILE_TEXT), _train_run("sst2", "table1", HOSTILE_TEXT)]
    page_path = build_report([_write(tmp_path / "results", recs)], tmp_path / "report", title=HOSTILE_TEXT)
    page = page_path.read_text(encoding="utf-8")
    p = assert_inert(page, page_path.parent)
    assert "".join(p.text).count(HOSTILE_TEXT) >= 6 and "&lt;script&gt;" in page


def test_forged_records_with_hostile_names_and_text_give_an_inert_page(tmp_path, unchecked):
    from privnlu.report import build_report, markdown_report

    recs = [_audit_point(HOSTILE_TASK, "none", "no privacy", 90.0, HOSTILE_TEXT),
            _audit_point(HOSTILE_TASK, "dp-ie", HOSTILE_TEXT, 5.0, HOSTILE_TEXT + " | a\nb"),
            _train_run(HOSTILE_TASK, "table1", HOSTILE_TEXT), _train_run("a/b/../../c", "table1", "slash")]
    folder = _write(tmp_path / "results", recs)
    page_path = build_report([folder], tmp_path / "report", title=HOSTILE_TEXT)
    page = page_path.read_text(encoding="utf-8")
    p = assert_inert(page, page_path.parent)
    text = "".join(p.text)
    assert HOSTILE_TEXT in text and HOSTILE_TASK in text  # shown as text, not dropped
    assert "&lt;script&gt;" in page
    figures = sorted(f.name for f in page_path.parent.iterdir() if f.suffix == ".png")
    assert len(figures) >= 3 and all(f.isascii() for f in figures)  # the audit frontier, learning curves
    assert not (tmp_path / "c").exists() and not list(tmp_path.glob("*.png"))  # nothing outside the report folder
    assert {f.parent for f in (tmp_path / "report").rglob("*")} == {tmp_path / "report"}
    md = markdown_report([folder])
    assert f"| {HOSTILE_TEXT} \\| a b |" in md  # a Markdown cell keeps its row: "|" escaped, no line break


def test_the_page_is_built_from_autoescaped_templates():
    from privnlu.report import markup

    env = markup.environment()
    for name in ("page.html.j2", "blocks.html.j2"):
        assert env.get_template(name).environment.autoescape(name) is True
    assert str(markup.para(HOSTILE_TEXT)) == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"
    assert str(markup.figure(HOSTILE_TASK, HOSTILE_TASK)).count('"') == 4  # the quotes of the two attributes only
    assert str(markup.join("<b>", markup.Markup("<b>"))) == "&lt;b&gt;<b>"
    packaged = Path(markup.__file__).parent / "templates"
    assert {p.name for p in packaged.glob("*.j2")} >= {"page.html.j2", "blocks.html.j2"}
    toml = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "templates/*.j2" in toml and '"jinja2>=3"' in toml


def test_a_plain_string_from_a_section_is_shown_as_text(tmp_path):
    """Text a section returns is escaped in the page, never trusted as markup."""
    from privnlu.report import build_report, section
    from privnlu.report.registry import SECTIONS

    @section("zz_plain", "plain string", order=10_000, kinds=("zz",))
    def plain(records):
        return [HOSTILE_TEXT]

    try:
        folder = _write(tmp_path / "r", [{"kind": "zz", "task": "t"}])
        page = build_report([folder], tmp_path / "report").read_text(encoding="utf-8")
    finally:
        SECTIONS.pop("zz_plain")
    assert_inert(page, tmp_path / "report")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("name", ["sst2", "a/b", "../..", ".", "..", "", "-rf", HOSTILE_TASK, "x" * 300, "é", "a b"])
def test_safe_filename(name):
    import re

    from privnlu.io import safe_filename

    out = safe_filename(name)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", out) and out not in (".", "..") and len(out) <= 80
    assert (out == name) == (re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,79}", name) is not None)
    assert safe_filename(name) == out  # stable


def test_safe_filename_keeps_different_names_apart():
    from privnlu.io import safe_filename

    names = ["a/b", "a b", "a_b", "a:b", "a\\b", "x" * 100, "x" * 101, "..", "."]
    assert len({safe_filename(n) for n in names}) == len(names)


def test_cli_report_with_a_slash_in_a_task_name(tmp_path, unchecked):
    from privnlu.cli.main import main

    folder = _write(tmp_path / "r", [_train_run("glue/sst2", "table1", "sst2 run"),
                                     _train_run("../escape", "table1", "other run")])
    assert main(["report", str(folder), "--out", str(tmp_path / "report")]) == 0
    report = tmp_path / "report"
    page = (report / "index.html").read_text(encoding="utf-8")
    assert_inert(page, report)
    assert len(list(report.glob("*.png"))) >= 2 and not (tmp_path / "escape").exists()
    assert "glue/sst2" in page


def test_cli_report_refuses_or_renders_a_slash_in_a_task_name(tmp_path, capsys):
    """With record validation on, a '/' in a task name is refused in one line before anything is written, or the
    page is rendered with safe file names: never a crash, never a file outside the report folder."""
    from privnlu.cli.main import main

    folder = _write(tmp_path / "r", [_train_run("../escape", "table1", "a run")])
    rc = main(["report", str(folder), "--out", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert rc in (0, 2) and not (tmp_path / "escape").exists() and not list(tmp_path.glob("*.png"))
    if rc == 2:
        assert err.count("\n") == 1 and "Traceback" not in err and not (tmp_path / "report").exists()
    else:
        assert_inert((tmp_path / "report" / "index.html").read_text(encoding="utf-8"), tmp_path / "report")


def test_cli_audit_refuses_a_hostile_task_name_before_any_work(tmp_path, capsys, monkeypatch):
    """A task name becomes part of file names and records, so the command line refuses one that is not a name,
    in one line, before anything is read or written (forged records with such names are tested above)."""
    from privnlu.cli.main import main

    monkeypatch.chdir(tmp_path)
    rc = main(["audit", "--task", HOSTILE_TASK, "--train-file", str(tmp_path / "missing.csv"),
               "--out", str(tmp_path / "audit"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "not a task name" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_cli_audit_with_hostile_text(tiny_model, cache_dir, tmp_path, monkeypatch):
    from privnlu.cli.main import main

    monkeypatch.chdir(tmp_path)
    words = ["river", "stone", "cloud", "amber", "violet", "harbor", "meadow", "lantern", "copper", "willow"]
    rows = [f"the {words[i % 10]} and the {words[(i // 10) % 10]} number {i}" for i in range(200)]
    rows[0] = rows[1] = HOSTILE_TEXT  # a private sentence of the audit
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[:160])))
    (tmp_path / "dev.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[160:])))
    out = tmp_path / "audit"
    rc = main(["audit", "--task", "q.onerror", "--train-file", str(tmp_path / "train.csv"),
               "--dev-file", str(tmp_path / "dev.csv"), "--model", str(tiny_model), "--schemes", "none",
               "--private", "8", "--distractors", "60", "--aux-size", "20", "--public-size", "40", "--epochs", "1",
               "--cache-dir", str(cache_dir), "--out", str(out), "--seed", "0", "--quiet"])
    assert rc == 0
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert_inert(page, out / "report")
    assert [f.name for f in (out / "report").glob("*.png")] and all(
        f.parent == out / "report" for f in (out / "report").rglob("*"))
    for f in out.rglob("*"):  # the audit's records and page name no folder of this machine
        if f.is_file() and f.suffix in (".json", ".html", ".md", ".txt"):
            text = f.read_text(encoding="utf-8")
            assert str(tmp_path) not in text and str(tiny_model) not in text and str(Path.home()) not in text, f


def test_sections_build_no_markup_from_formatted_strings():
    """Markup comes from the templates: no section formats a tag into a string or escapes by hand."""
    folder = ROOT / "src" / "privnlu" / "report"
    found = []
    for path in sorted(folder.glob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""\bf(["'])[^"']*<[a-z/][a-z0-9]*[\s>]""", line) or "html.escape(" in line:
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
