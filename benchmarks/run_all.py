"""Run every benchmark (``make bench``), each in a fresh interpreter with small sizes; results in runs/bench/.

Each benchmark writes ``runs/bench/<name>.json`` (see benchmarks/common.py: the machine's CPU model and instruction
sets, torch's CPU capability, and ratios against a reference measured in the same run); this script adds
``runs/bench/run_all.json``, which lists every benchmark's outcome (ok, skipped with its reason, or failed) and
ratios. A benchmark that cannot run here (no numba, no data) skips itself with one line; the others do not depend
on GLUE (they use the packaged tweets corpus and synthetic data). The default sizes take roughly 20 minutes on 2
cores; ``--quick`` only checks that everything runs (about 12 minutes, most of it the README quickstart).

    python benchmarks/run_all.py [--quick] [--only texthide,features] [--list]

Run a benchmark alone with its own script (``python benchmarks/bench_<name>.py --help``) for other sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import SKIPPED, machine, out_dir, save  # noqa: E402

#: name -> (script, arguments at the default sizes, arguments with --quick)
BENCHMARKS: dict[str, tuple[str, list[str], list[str]]] = {
    "texthide": ("bench_texthide.py", ["--rounds", "20", "--loop-rows", "512"], ["--rounds", "3", "--loop-rows", "128"]),
    "features": ("bench_features.py", ["--sentences", "768"], ["--sentences", "128"]),
    "sweep": ("bench_sweep.py", ["--train-limit", "3000", "--dev-limit", "500", "--epochs", "2"],
              ["--train-limit", "3000", "--dev-limit", "500", "--epochs", "1"]),
    "finetune": ("bench_finetune.py", ["--train-limit", "5000", "--steps", "6", "--rounds", "2"],
                 ["--train-limit", "2000", "--steps", "2", "--rounds", "1"]),
    "startup": ("bench_startup.py", ["--rounds", "3"], ["--rounds", "1"]),
    "quickstart": ("bench_quickstart.py", ["--quick"], ["--quick"]),
    "dp_account_limits": ("bench_dp_account_limits.py", [], []),
    "dchi_mtxt": ("bench_dchi_mtxt.py", ["--tokens", "8192", "--loop-tokens", "64"], ["--tokens", "1024", "--loop-tokens", "16"]),
    "dchi_deniability": ("bench_dchi_deniability.py", ["--words", "512", "--draws", "500", "--brute-words", "16"],
                         ["--words", "128", "--draws", "200", "--brute-words", "4"]),
    "sparse_nmf": ("bench_sparse_nmf.py", ["--n", "30000", "--groups", "600"], ["--n", "5000", "--groups", "100"]),
    "nmf_kernels": ("bench_nmf_kernels.py", ["--n", "60000", "--groups", "1200"], ["--n", "5000", "--groups", "100"]),
    "nmf_locality": ("bench_nmf_locality.py", ["--n", "60000", "--groups", "1200", "--iters", "2"],
                     ["--n", "5000", "--groups", "100", "--iters", "1"]),
    "dp_sgd": ("bench_dp_sgd.py", ["--steps", "4", "--rounds", "2"],
               ["--steps", "1", "--rounds", "1", "--head-steps", "10"]),
    "audit_own_file": ("bench_audit_own_file.py", ["--rows", "1000"], ["--rows", "200", "--schemes", "none,dp-sgd"]),
    "gradient_attack": ("bench_gradient_attack.py", ["--dims", "4,16,64", "--reps", "2"], ["--dims", "4,16", "--reps", "1"]),
    # bench_reconstruction.py is also the scaling-curve tool: it keeps its own record format, wrapped below
    "reconstruction": ("bench_reconstruction.py", ["--task", "tweets", "--train-limit", "3000", "--n", "50", "--epochs", "20"],
                       ["--task", "tweets", "--train-limit", "3000", "--n", "20", "--epochs", "5", "--methods", "nmf"]),
}


def run(cmd: list[str], env: dict) -> tuple[int, str | None]:
    """Run ``cmd``, passing its output through; its exit code and the reason it gave if it skipped itself."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    reason = None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if line.startswith("skipped: "):
            reason = line[len("skipped: "):].strip()
    return proc.wait(), reason


def run_reconstruction(script: Path, args: list[str], env: dict) -> int:
    """bench_reconstruction.py writes its own attack record; keep it whole under ``details`` of the usual record."""
    with tempfile.TemporaryDirectory() as tmp:
        rec_path = Path(tmp) / "reconstruction.json"
        code = subprocess.run([sys.executable, str(script), *args, "--threads", "1", "--out", str(rec_path)], env=env,
                              stdout=subprocess.DEVNULL).returncode
        if code != 0 or not rec_path.exists():
            return code or 1
        rec = json.loads(rec_path.read_text())
    reference = ("scoring all N^2 pairs with the same factorised network, extrapolated from a slice of rows"
                 if rec.get("graph_neighbours") else "scoring all N^2 pairs with materialised [a; b] inputs, "
                                                     "extrapolated from a slice of rows")
    save("reconstruction", reference=reference, ratios={"pair_scoring_speedup": rec["speedup_vs_reference"]},
         record=rec)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the smallest sizes: checks that every benchmark runs")
    ap.add_argument("--only", help="comma-separated benchmark names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args()
    if args.list:
        for name, (script, full, quick) in BENCHMARKS.items():
            print(f"{name:18s} benchmarks/{script} {' '.join(quick if args.quick else full)}")
        return 0
    names = args.only.split(",") if args.only else list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    m = machine()
    print(f"machine: {m['cpu_model']}, {m['cpus']} CPUs, torch capability {m['torch_cpu_capability']}, "
          f"AVX-512 BF16 {m['has_avx512_bf16']}, AMX {m['has_amx']}", flush=True)
    outcome: dict[str, dict] = {}
    t_all = time.perf_counter()
    for name in names:
        script, full, quick = BENCHMARKS[name]
        sizes = quick if args.quick else full
        print(f"\n== {name}: benchmarks/{script} {' '.join(sizes)}", flush=True)
        path = out_dir() / f"{name}.json"
        path.unlink(missing_ok=True)
        t0 = time.perf_counter()
        reason = None
        if name == "reconstruction":
            code = run_reconstruction(HERE / script, sizes, env)
        else:
            code, reason = run([sys.executable, str(HERE / script), *sizes], env)
        wall = round(time.perf_counter() - t0, 1)
        if code == SKIPPED:
            outcome[name] = {"status": "skipped", "reason": reason, "wall_seconds": wall}
        elif code != 0 or not path.exists():
            outcome[name] = {"status": "failed", "exit_code": code, "wall_seconds": wall}
            print(f"!! {name} failed (exit code {code})", flush=True)
        else:
            outcome[name] = {"status": "ok", "wall_seconds": wall, "ratios": json.loads(path.read_text())["ratios"]}
    total = time.perf_counter() - t_all
    out_dir().mkdir(parents=True, exist_ok=True)
    (out_dir() / "run_all.json").write_text(json.dumps({"machine": m, "quick": args.quick, "wall_seconds": round(total, 1),
                                                        "benchmarks": outcome}, indent=2) + "\n")
    print(f"\n== summary ({'quick' if args.quick else 'default'} sizes; every ratio is against a reference measured "
          f"in the same run; records in {out_dir()}/)")
    for name, o in outcome.items():
        first = next(iter(o.get("ratios", {}).items()), None)
        print(f"  {name:18s} {o['status']:8s} " + (f"{first[0]} {first[1]:.3g}" if first else o.get("reason") or ""))
    failed = [n for n, o in outcome.items() if o["status"] == "failed"]
    print(f"{len(outcome) - len(failed)} of {len(outcome)} benchmarks ran or skipped themselves in {total / 60:.1f} min"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
