"""The benchmark harness (benchmarks/run_all.py, what `make bench` runs, and benchmarks/common.py).

Checks the bookkeeping, not the speed: every benchmark script is registered, each says what it measures and how to
run it alone, and a run writes a record with the machine's description and ratios only.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}_under_test", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def run_all():
    return load("run_all")


def test_every_benchmark_script_is_run_by_make_bench(run_all):
    scripts = {script for script, _, _ in run_all.BENCHMARKS.values()}
    assert scripts == {p.name for p in BENCH.glob("bench_*.py")}
    assert all((BENCH / s).is_file() for s in scripts)


def test_each_benchmark_says_what_it_measures_and_how_to_run_it_alone(run_all):
    for script, _, _ in run_all.BENCHMARKS.values():
        text = (BENCH / script).read_text()
        doc = re.match(r'\s*"""(.*?)"""', text, re.S)
        assert doc and f"benchmarks/{script}" in doc.group(1), script


def test_benchmark_text_is_about_the_product(run_all):
    files = [BENCH / s for s, _, _ in run_all.BENCHMARKS.values() if s != "bench_reconstruction.py"]
    for path in [*files, BENCH / "common.py", BENCH / "run_all.py"]:
        assert not re.search(r"(session|issue)s? [0-9]", path.read_text(), re.I), path.name


def test_a_record_holds_the_machine_and_ratios(tmp_path, monkeypatch, capsys):
    common = load("common")
    monkeypatch.setenv("PRIVNLU_BENCH_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="no ratio"):
        common.save("empty", reference="nothing", ratios={})
    common.save("demo", reference="a copy", ratios={"speedup": 2.0}, seconds={"copy": 0.5})
    rec = json.loads((tmp_path / "demo.json").read_text())
    assert rec["ratios"] == {"speedup": 2.0} and rec["reference"] == "a copy" and rec["details"]["seconds"]["copy"] == 0.5
    m = rec["machine"]
    assert m["cpu_model"] and m["torch_cpu_capability"] and {"has_avx2", "has_avx512_bf16", "has_amx"} <= set(m)
    assert "speedup" in capsys.readouterr().out


def test_make_bench_runs_one_benchmark_and_summarises(tmp_path):
    env = {**os.environ, "PRIVNLU_BENCH_DIR": str(tmp_path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--quick", "--only", "dp_account_limits"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "run_all.json").read_text())
    assert summary["benchmarks"]["dp_account_limits"]["status"] == "ok"
    rec = json.loads((tmp_path / "dp_account_limits.json").read_text())
    assert rec["benchmark"] == "dp_account_limits" and rec["ratios"]["laplace_slowest_over_reference"] > 0
    bad = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--only", "nonsense"], env=env, capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "unknown benchmark" in bad.stderr
