"""CLI start-up: ``privnlu --help``, ``privnlu <group> --help`` and ``privnlu <command> --help`` for every command,
against a bare ``python -c pass`` (the reference), each the median of ``--rounds`` fresh interpreters started from
this process.

Ratios: each case's median wall time over the bare interpreter's (``privnlu --help``, the median and the slowest
case, and every case in the details). It asserts nothing; tests/cli/test_cli_reliability.py checks the import-level
fact behind it (building any command's parser imports no torch). Run alone:

    PYTHONPATH=src python benchmarks/bench_startup.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from common import save

BARE = "python -c pass"


def cases() -> dict[str, list[str]]:
    from privnlu.cli.main import COMMANDS, GROUPS

    out = {BARE: ["-c", "pass"], "privnlu --help": ["-m", "privnlu.cli.main", "--help"]}
    for path in [*GROUPS, *COMMANDS]:
        out[f"privnlu {path} --help"] = ["-m", "privnlu.cli.main", *path.split(), "--help"]
    return out


def median_seconds(args: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="fresh interpreters per case (default: 5)")
    rounds = ap.parse_args().rounds
    all_cases = cases()
    ref = median_seconds(all_cases[BARE], rounds)
    ratio = {name: median_seconds(args, rounds) / ref for name, args in all_cases.items() if name != BARE}
    slowest = max(ratio, key=ratio.get)
    save("startup", reference=f"a bare interpreter ({BARE}), median of {rounds} starts",
         ratios={"privnlu_help_over_bare": ratio["privnlu --help"], "median_help_over_bare": statistics.median(ratio.values()),
                 "slowest_help_over_bare": ratio[slowest]},
         rounds=rounds, slowest_case=slowest, bare_seconds=ref, ratio_per_case=ratio)


if __name__ == "__main__":
    main()
