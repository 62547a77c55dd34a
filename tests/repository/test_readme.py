"""The README's examples work as written: every command parses, and the Python quickstart runs (real packaged
MiniLM, small limits)."""

import re
import shlex
from pathlib import Path

import pytest

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_every_readme_command_parses():
    from privnlu.cli.main import build_parser
    from privnlu.cli.release import rewrite

    lines = [line.split("  #")[0].strip() for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S)
             for line in block.replace("\\\n", " ").splitlines()]
    commands = [shlex.split(line)[1:] for line in lines if line.startswith("privnlu ")]
    assert len(commands) >= 9
    for argv in commands:
        build_parser().parse_args(rewrite(argv))  # argparse exits (fails the test) on an unknown option or value


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


def quickstart_times(record: dict) -> str:
    """The README's sentence of measured quickstart times, written from the quickstart benchmark's record."""
    rows = [r for r in record["details"]["commands"] if not r["command"].startswith("printf")]
    assert all(r["exit"] in (0, 1) for r in rows) and not record["details"]["quick"]
    slowest = max(rows, key=lambda r: r["seconds"])

    def minutes(s: float) -> str:
        return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"

    def what(r: dict) -> str:
        words = r["command"].split()
        scheme = words[words.index("--scheme") + 1]
        return f"the {scheme} release" if words[1] == "release" else f"{scheme} training"

    full = [f"{what(r)} {minutes(r['full_seconds'])}" for r in rows if "full_seconds" in r]
    m = record["machine"]
    return (f"Measured on {m['cpus']} cores ({m['cpu_model']}), in this order, from an empty feature cache: every "
            f"quickstart command took {minutes(slowest['seconds'])} or less, {sum(r['seconds'] < 60 for r in rows)} of "
            f"the {len(rows)} under a minute (the slowest: `{' '.join(slowest['command'].split()[:3])}`); at full size (all tweets), {full[0]} (it encodes the "
            f"tweets; the commands after it reuse those encodings), {', '.join(full[1:-1])} and {full[-1]} "
            f"(`benchmarks/records/quickstart.json`).")


def test_the_readme_states_the_quickstart_times_of_its_record():
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "records" / "quickstart.json").read_text())
    assert quickstart_times(record) in " ".join(README.split())
