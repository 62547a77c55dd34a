"""Start-up of the CLI (issue 15 section 3): ``privnlu --help`` and ``privnlu X --help`` against a bare
``python -c pass``, each in a fresh interpreter, timed in this process. Prints ratios and seconds; asserts nothing."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CASES = {"python -c pass": ["-c", "pass"], "privnlu --help": ["-m", "privnlu.cli.main", "--help"],
         "privnlu tasks --help": ["-m", "privnlu.cli.main", "tasks", "--help"],
         "privnlu train --help": ["-m", "privnlu.cli.main", "train", "--help"]}


def median_seconds(args: list[str], rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


if __name__ == "__main__":
    ref = median_seconds(CASES["python -c pass"])
    for name, args in CASES.items():
        s = median_seconds(args)
        print(f"{name:24s} {s:6.2f} s  {s / ref:6.1f}x a bare interpreter")
