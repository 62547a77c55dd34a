"""Start-up of the CLI (issue 15 section 3): ``privnlu --help``, ``privnlu <group> --help`` and ``privnlu X --help``
for every command, against a bare ``python -c pass``, each the median of fresh interpreters timed in this process.
Prints seconds and ratios; asserts nothing (tests/test_cli_reliability.py checks the import-level fact instead:
building any command's parser imports no torch).

    PYTHONPATH=src python benchmarks/bench_startup.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def cases() -> dict[str, list[str]]:
    from privnlu.cli.main import COMMANDS, GROUPS

    out = {"python -c pass": ["-c", "pass"], "privnlu --help": ["-m", "privnlu.cli.main", "--help"]}
    for path in [*GROUPS, *COMMANDS]:
        out[f"privnlu {path} --help"] = ["-m", "privnlu.cli.main", *path.split(), "--help"]
    return out


def median_seconds(args: list[str], rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="fresh interpreters per case (default: 5)")
    rounds = ap.parse_args().rounds
    all_cases = cases()
    ref = median_seconds(all_cases["python -c pass"], rounds)
    slowest = 0.0
    for name, args in all_cases.items():
        s = median_seconds(args, rounds)
        slowest = max(slowest, s) if name != "python -c pass" else slowest
        print(f"{name:36s} {s:6.2f} s  {s / ref:6.1f}x a bare interpreter", flush=True)
    print(f"{'slowest privnlu --help':36s} {slowest:6.2f} s")
