"""The README's examples work as written: every command parses, and the Python quickstart runs (real packaged
MiniLM, small limits)."""

import re
import shlex
from pathlib import Path

import pytest

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_every_readme_command_parses():
    from privnlu.cli.main import build_parser

    lines = [line.split("  #")[0].strip() for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S)
             for line in block.splitlines()]
    commands = [shlex.split(line)[1:] for line in lines if line.startswith("privnlu ")]
    assert len(commands) >= 9
    for argv in commands:
        build_parser().parse_args(argv)  # argparse exits (fails the test) on an unknown option or value


@pytest.mark.slow
def test_readme_python_quickstart_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README has no Python example"
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)
    assert scope["shared"].x.shape == (256, 384)
    assert (tmp_path / "tweets.key").stat().st_mode & 0o777 == 0o600
    assert scope["record"]["scheme"] == "texthide" and scope["record"]["score"] is not None
    assert [a["text"] for a in scope["answers"]] == ["what a lovely day", "this is awful"]
    assert scope["found"]["threat_model"] and len(scope["found"]["answers"]) == 256
