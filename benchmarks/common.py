"""Shared helpers for the benchmarks: timing, the machine description, and one JSON record per benchmark.

Every benchmark reports **ratios** against a reference it measures in the same process (a bare loop, a copy, a
plain matrix product, the unoptimised path, ...): absolute times differ from CPU to CPU (AMX, AVX-512 BF16,
AVX2) and on a shared machine from minute to minute, so no number is meant to be read alone. The seconds behind
each ratio are kept in the record's ``details`` for whoever wants them.

:func:`save` writes ``runs/bench/<name>.json`` (``$PRIVNLU_BENCH_DIR`` overrides the folder) with:

* ``kind``: ``benchmark`` (``privnlu report`` renders such records);
* ``machine``: CPU model name (``lscpu``), the instruction sets that matter for the products (AVX2, AVX-512,
  AVX-512 BF16, AMX), cores, torch's CPU capability and threads, torch and Python versions, and the 1-minute load average when it was written;
* ``reference``: what the ratios divide by;
* ``ratios``: the benchmark's results, each a ratio to that reference (``x`` faster, or ``x`` the bound);
* ``details``: sizes, seconds and anything else needed to read the ratios.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

import torch

#: exit status of a benchmark that cannot run here (missing data or optional package); automake's "skipped"
SKIPPED = 77

ISA_FLAGS = {"avx2": ("avx2",), "avx512f": ("avx512f",), "avx512_bf16": ("avx512_bf16",),
             "amx": ("amx_tile", "amx_bf16", "amx_int8")}


def skip(reason: str) -> None:
    """Say in one line why this benchmark cannot run here, and exit with :data:`SKIPPED`."""
    print(f"skipped: {reason}", flush=True)
    raise SystemExit(SKIPPED)


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Minimum wall time of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Wall time of one call, and its result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleaved(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Best wall time of each function, timed alternately for ``rounds`` rounds after one warm-up call each, so
    that load from other processes hits the measured function and its reference alike."""
    best = {}
    for name, fn in fns.items():
        fn()
        best[name] = float("inf")
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _lscpu() -> dict[str, str]:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, env={**os.environ, "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines()) if v}


def _proc_cpuinfo() -> dict[str, str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info: dict[str, str] = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        info.setdefault(k.strip(), v.strip())
    return info


@lru_cache(maxsize=1)
def machine() -> dict:
    """What the numbers depend on: the CPU's model and instruction sets, and torch's view of them."""
    lscpu, cpuinfo = _lscpu(), _proc_cpuinfo()
    flags = set((lscpu.get("Flags") or cpuinfo.get("flags", "")).split())
    probe = {name: getattr(torch.cpu, fn, lambda: None)()
             for name, fn in (("avx512_bf16", "_is_avx512_bf16_supported"), ("amx", "_is_amx_tile_supported"))}
    isa = {name: any(f in flags for f in names) or bool(probe.get(name)) for name, names in ISA_FLAGS.items()}
    return {
        "cpu_model": lscpu.get("Model name") or cpuinfo.get("model name") or platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        **{f"has_{k}": v for k, v in isa.items()},
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def _load() -> float | None:
    """The machine's 1-minute load average when the record is written (other processes' work shows here)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def out_dir() -> Path:
    return Path(os.environ.get("PRIVNLU_BENCH_DIR", "runs/bench"))


def save(name: str, *, reference: str, ratios: dict[str, float], **details) -> dict:
    """Write ``runs/bench/<name>.json`` and print its ratios (see the module docstring)."""
    if not ratios:
        raise ValueError(f"benchmark {name}: no ratio to report")
    record = {"kind": "benchmark", "benchmark": name, "machine": {**machine(), "load_average_1min": _load()},
              "reference": reference,
              "ratios": {k: round(float(v), 3) for k, v in ratios.items()}, "details": details}
    out = out_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    m = record["machine"]
    print(f"{name}  ({m['cpu_model']}, torch {m['torch_cpu_capability']}, {m['torch_threads']} threads)")
    print(f"  reference: {reference}")
    width = max(map(len, record["ratios"]))
    for k, v in record["ratios"].items():
        print(f"  {k:{width}s}  {v:.3g}")
    print(f"  -> {path}", flush=True)
    return record
