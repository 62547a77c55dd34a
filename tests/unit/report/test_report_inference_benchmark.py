"""The report sections of the query-inference records and of committed benchmark records: a Markdown table
with one row per (m, k) (majority-class points flagged) and one row per ratio, and the HTML page builds."""

from __future__ import annotations

import json

from privnlu.report import build_report, markdown_report


def _inference(m: str, avg: float, chance: float = 50.92) -> dict:
    return {"kind": "query_inference", "task": "sst2", "metric": "accuracy", "n_dev": 872,
            "settings": {"task": "sst2", "train_limit": 2000, "epochs": 10, "batch_size": 64, "lr": 1e-3,
                         "mask_repeats": 3, "samples": 32, "seed": 0, "m": m, "k": 4},
            "recorded_dev_score": 70.0, "chance_utility": chance,
            "pool_average": {"accuracy": avg, "confidence": 0.8},
            "one_mask": {"accuracy": [70.0, 71.0, 69.0], "mean": 70.0, "sd": 1.0, "confidence": 0.9,
                         "label_changes": 12.5},
            "samples": {"n": 32, "accuracy": avg - 0.5, "confidence": 0.81}, "seconds": 1.0}


def _benchmark() -> dict:
    return {"kind": "benchmark", "benchmark": "audit_own_file", "reference": "one plain training run",
            "ratios": {"audit_over_10_minute_budget": 0.8, "dp-ie_over_plain_training": 30.0},
            "machine": {"cpu_model": "AMD EPYC", "cpus": 2, "has_avx2": True, "has_avx512f": False,
                        "has_avx512_bf16": False, "has_amx": False, "torch": "2.13.0+cpu", "torch_threads": 2,
                        "load_average_1min": 0.4},
            "details": {"rows": 1000}}


def _table(md: str, title: str) -> list[list[str]]:
    part = md.split(f"### {title}", 1)[1].split("###", 1)[0]
    lines = [ln for ln in part.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines[2:]]


def test_query_inference_rows_and_majority_flag(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_inference("16", 74.0)))
    (tmp_path / "b.json").write_text(json.dumps(_inference("256", 50.0)))
    md = markdown_report([tmp_path])
    rows = _table(md, "TextHide models: one random mask per query against the pool average")
    assert [r[1] for r in rows] == ["(16, 4)", "(256, 4)"]  # sorted by m
    assert rows[0][8] == "74.00" and float(rows[0][9]) == 4.0
    assert rows[1][8].endswith("(no useful utility)") and not rows[0][8].endswith(")")
    assert (build_report([tmp_path], tmp_path / "out") / "").exists()


def test_benchmark_records_show_every_ratio_and_the_machine(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps(_benchmark()))
    rows = _table(markdown_report([tmp_path]), "Benchmarks: ratios against a reference measured in the same run")
    assert [(r[1], float(r[2])) for r in rows] == [("audit over 10 minute budget", 0.8), ("dp-ie over plain training", 30.0)]
    assert "AMD EPYC" in rows[0][4] and "load 0.4" in rows[0][4] and rows[1][4] == ""
