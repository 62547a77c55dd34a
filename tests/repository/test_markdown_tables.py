"""Every Markdown table the report prints (``privnlu report --markdown``, the documentation's tables) is well formed:
each row has the header's cells, the separator row matches, and ``|`` or line breaks from the data stay in their
cell."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEPARATOR = re.compile(r"\|(\s*:?-{3,}:?\s*\|)+")


def cells(line: str) -> list[str]:
    """A GitHub Markdown table row's cells: split on '|' that no backslash escapes."""
    assert line.startswith("|") and line.endswith("|"), line
    out, cur, i = [], [], 1
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            cur.append(line[i:i + 2])
            i += 2
            continue
        if c == "|":
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    assert not "".join(cur).strip(), f"text after the last '|': {line!r}"
    return out


def tables(text: str) -> list[list[str]]:
    """The Markdown tables of a text, each as its lines (header, separator, rows)."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append(lines[i:j])
            i = j
        else:
            i += 1
    return out


def check_table(block: list[str], where: str) -> None:
    assert len(block) >= 2, f"{where}: a table without a separator row: {block[0][:120]!r}"
    assert SEPARATOR.fullmatch(block[1]), f"{where}: not a separator row: {block[1][:120]!r}"
    width = len(cells(block[0]))
    assert len(cells(block[1])) == width, f"{where}: separator has {len(cells(block[1]))} cells, header {width}"
    for row in block[2:]:
        assert len(cells(row)) == width, f"{where}: {len(cells(row))} cells against {width}: {row[:160]!r}"


def section_markdown(paths: list[Path]) -> list[tuple[str, str]]:
    """(section name, Markdown) of every section with something to show for the records, as ``--markdown`` renders them."""
    from privnlu.report.builder import _markdown, _render_all, load_results

    bodies, _ = _render_all(load_results(paths), _markdown)
    return [(sec.name, body) for sec, body in bodies]


def test_every_section_of_the_committed_records_prints_valid_tables():
    seen: dict[str, int] = {}
    for name, md in section_markdown([ROOT / "results"]):
        for block in tables(md):
            check_table(block, name)
            seen[name] = seen.get(name, 0) + 1
    assert len(seen) >= 15 and sum(seen.values()) >= 40, seen  # the committed records reach most sections


@pytest.mark.parametrize("folder", sorted({str(p.parent.relative_to(ROOT)) for p in (ROOT / "results").rglob("*.json")
                                            if not any(x.startswith(".") for x in p.relative_to(ROOT).parts)}))
def test_each_record_folder_prints_valid_tables(folder):
    from privnlu.report import markdown_report

    for block in tables(markdown_report([ROOT / folder])):
        check_table(block, folder)


def test_cells_from_data_cannot_break_a_row():
    from privnlu.report.render import md_table

    hostile = ["a | b", "ends with \\", "\\|", "two\nlines", "|x|", "\\\\|", "\r\n", "", None, 1.5]
    md = md_table(["|x| head", "second"], [[h, "ok"] for h in hostile])
    [block] = tables(md)
    check_table(block, "hostile cells")
    assert len(block) == 2 + len(hostile)
    assert [cells(r)[1] for r in block[2:]] == ["ok"] * len(hostile)
    assert cells(block[0])[0] == "\\|x\\| head" and cells(block[2])[0] == "a \\| b"
    with pytest.raises(ValueError, match="3 cells, its header 2"):
        md_table(["a", "b"], [[1, 2, 3]])


def test_the_check_can_fail():
    with pytest.raises(AssertionError):
        check_table(["| a | b |", "|---|---|", "| 1 | 2 | 3 |"], "too many cells")
    with pytest.raises(AssertionError):
        check_table(["| a | b |", "|---|---|---|", "| 1 | 2 |"], "separator")
    with pytest.raises(AssertionError):
        check_table(["| a | |x| head |", "|---|---|", "| 1 | 2 |"], "an unescaped pipe in the header")


def test_a_results_folder_is_read_without_its_hidden_files_and_folders(tmp_path):
    """A recipe keeps checkpoints and trained models (with their own JSON) in hidden places beside its records."""
    import json

    from privnlu.report.builder import load_results

    rec = {"kind": "dchi_pretrain", "objective": "vanilla"}
    (tmp_path / "pretrain_a.json").write_text(json.dumps(rec))
    for hidden in (tmp_path / ".pretrain" / "a" / "pretrain.json", tmp_path / ".p.part.ckpt.json"):
        hidden.parent.mkdir(parents=True, exist_ok=True)
        hidden.write_text(json.dumps(rec))
    assert len(load_results([tmp_path])) == 1
    assert len(load_results([tmp_path / ".pretrain" / "a" / "pretrain.json"])) == 1  # named: read
