"""The README's quickstart commands, timed as a user runs them: at the README's sizes, and at full size.

Runs every command of the README's three quickstart blocks in order in an empty temporary folder (``bash -c``,
the installed ``privnlu``), and again with ``--train-limit 2000`` removed (all 33,519 tweets) for the commands that
take it and release or train (:data:`FULL`). The reference is the same command at the README's size, measured in
the same run, so each full-size
command reports its time as a ratio to its quickstart time; the seconds of both, the 1-minute load average before
each command and the CPU are in the record's details. Each of the two runs starts with an empty feature cache
(``PRIVNLU_CACHE`` in its folder), as on a fresh install. ``--record`` writes the record to
``benchmarks/records/quickstart.json`` (the README's quickstart times come from it).

    PYTHONPATH=src python benchmarks/bench_quickstart.py [--quick] [--record]

``--quick`` runs the README's sizes only (no full-size runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import out_dir, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from test_readme_quickstart import quickstart_blocks, without_comment  # noqa: E402  (one reader of the README)

LIMIT = "--train-limit 2000"
#: the commands also timed at full size: the data owner's releases and the model builder's central training (the
#: federated and audit commands at full size take far longer and are not part of the quickstart's promise)
FULL = ("privnlu release ", "privnlu train ")


def run(command: str, folder: Path, env: dict) -> tuple[float, float, int]:
    """Seconds, load average before, exit code."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    code = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True).returncode
    return time.perf_counter() - t0, load, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the README's sizes only")
    ap.add_argument("--record", action="store_true", help="write benchmarks/records/quickstart.json")
    a = ap.parse_args()
    exe = shutil.which("privnlu") or str(Path(sys.executable).parent / "privnlu")
    env = {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    commands = [without_comment(c) for block in quickstart_blocks().values() for c in block]
    rows = []
    with tempfile.TemporaryDirectory() as quick, tempfile.TemporaryDirectory() as full:
        # each run starts with an empty feature cache, as on a fresh install: nothing is encoded in advance
        quick_env = {**env, "PRIVNLU_CACHE": str(Path(quick) / ".cache")}
        full_env = {**env, "PRIVNLU_CACHE": str(Path(full) / ".cache")}
        for command in commands:
            seconds, load, code = run(command, Path(quick), quick_env)
            row = {"command": command, "seconds": round(seconds, 1), "load_before": round(load, 2), "exit": code}
            if LIMIT in command and command.startswith(FULL) and not a.quick:
                big = command.replace(LIMIT + " ", "")
                s_full, l_full, c_full = run(big, Path(full), full_env)
                row.update(full_command=big, full_seconds=round(s_full, 1), full_load_before=round(l_full, 2),
                           full_exit=c_full, ratio=round(s_full / seconds, 1))
            elif command.startswith(("printf", *FULL)) and not a.quick:
                run(command, Path(full), full_env)  # what later full-size commands read (the texts file)
            rows.append(row)
            print(f"{row['seconds']:7.1f} s  {row.get('full_seconds', '-'):>7} s  exit {code}  {command}", flush=True)
    ratios = {}
    for i, r in enumerate(rows):
        name = f"{i + 1:02d} {r['command'].split(' --')[0]}"
        ratios[f"{name}: quickstart / 60 s"] = r["seconds"] / 60
        if "ratio" in r:
            ratios[f"{name}: full / quickstart"] = r["ratio"]
    save("quickstart", reference="one minute (the README's promise) and each command at the README's size, same run",
         ratios=ratios, commands=rows, quick=a.quick)
    if a.record:
        dest = ROOT / "benchmarks" / "records" / "quickstart.json"
        shutil.copyfile(out_dir() / "quickstart.json", dest)
        print(f"record: {dest}")


if __name__ == "__main__":
    main()
