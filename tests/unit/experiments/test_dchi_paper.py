"""d_chi against Qu et al. 2021 as written: the paper's sentence and distinct-output counts (Tables 1-2), the
worst-case deniability criterion (Figure 4), the paired t-test and Tables 4-5 grouping, the paper values."""

from __future__ import annotations

import json
import math

import pytest
import torch

from privnlu import paper_values as pv
from privnlu.cli.main import main
from privnlu.attacks.dchi import analysis as dchi_analysis
from privnlu.experiments import qu2021
from privnlu.report.dchi_training_sections import table45
from privnlu.stats import paired_t_test
from privnlu.training import private_finetune as pf
from privnlu.mechanisms.dchi_stats import worst_case


def test_paper_values_are_registered():
    assert pv.lookup("qu2021", "Table 4", "eta=100", "BERT text").value == 0.7030
    assert pv.lookup("qu2021", "Table 5", "null", "BiLSTM null").value == 0.8261
    assert pv.lookup("qu2021", "Table 6", "SST eta=75", "denoising").value == 0.6089
    assert pv.lookup("qu2021", "Table 2", "emotions", "distinct outputs").value == 825
    assert pv.lookup("qu2021", "Figure 4", "eta=75", "max N_w").claim
    assert pv.lookup("huang2020", "Table 2", "k=1", "d=1024").value == 0.08
    assert dchi_analysis.PAPER_TABLE3["sst2"][100] == 0.3402 and dchi_analysis.EXAMPLE_SENTENCE.startswith("the emotions")
    # every Table 4/5 cell of the four columns, six etas
    assert len(pv.values("qu2021", "Table 4")) == 2 + 4 * 6


def test_finetune_lookup_maps_our_runs_to_the_paper_cells():
    from privnlu.paper_values.qu2021 import finetune

    assert finetune("sst2", "transformer", "text", 100.0).value == 0.7030
    assert finetune("mrpc", "bilstm", "token", 150).value == 0.6811  # MRPC stands in for QQP (Table 5)
    assert finetune("sst2", "transformer", "null", None).value == 0.9289
    assert finetune("sst2", "transformer", "text", 65.6) is None and finetune("cola", "bilstm", "text", 100) is None


def test_worst_case_is_max_n_and_min_s():
    n = torch.tensor([10, 700, 3, 500])
    s = torch.tensor([900, 120, 990, 499])
    w = worst_case(n, s, torch.tensor([101, 102, 103, 104]))
    assert (w["max_n_w"], w["argmax_n_w"], w["min_s_w"], w["argmin_s_w"]) == (700, 102, 120, 102)
    assert w["n_w_above_500"] == 1 and w["s_w_below_500"] == 2 and w["words"] == 4


def test_paired_t_test_matches_the_formula():
    a, b = [0.80, 0.82, 0.85], [0.70, 0.75, 0.71]
    res = paired_t_test(a, b)
    d = [x - y for x, y in zip(a, b)]
    m = sum(d) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / 2)
    assert res["t"] == pytest.approx(m / (sd / math.sqrt(3))) and 0 < res["p"] < 0.05
    assert paired_t_test([0.5, 0.6], [0.5, 0.6])["p"] == 1.0
    with pytest.raises(Exception):
        paired_t_test([0.5], [0.4])


def test_table45_pairs_by_seed_and_budget():
    recs = []
    for seed, (tok, txt, lstm_txt) in enumerate([(0.50, 0.70, 0.60), (0.52, 0.74, 0.61), (0.51, 0.72, 0.66)]):
        for enc, mode, acc in (("transformer", "token", tok), ("transformer", "text", txt), ("bilstm", "text", lstm_txt)):
            recs.append({"kind": "dchi_finetune", "task": "sst2", "encoder": enc, "mode": mode, "eta": 100.0,
                         "seed": seed, "score": 100 * acc, "metrics": {"accuracy": acc}})
    rows = {(r["encoder"], r["mode"]): r for r in table45(recs)}
    text = rows[("transformer", "text")]
    assert text["mean"] == pytest.approx(0.72) and text["seeds"] == [0, 1, 2]
    assert text["vs_token"]["mean_diff"] == pytest.approx(0.21) and text["vs_token"]["p"] < 0.01
    assert text["vs_other_encoder"]["n"] == 3 and "vs_token" not in rows[("bilstm", "text")]
    assert pf.budget(10_000, 32, 3) == {"optimizer_steps": 939, "examples_seen": 30_000}
    assert pf.paper_lr("sst2") == 2e-5 and pf.paper_lr("mrpc") == 4e-5

def test_table45_compares_each_encoders_drop_from_its_own_null_run():
    """The transformer starts higher and loses more: equal accuracy under privacy, a larger drop (paired by seed)."""
    cells = {("transformer", "null", None): (0.85, 0.86, 0.84), ("transformer", "token", 100.0): (0.62, 0.64, 0.61),
             ("bilstm", "null", None): (0.80, 0.79, 0.81), ("bilstm", "token", 100.0): (0.63, 0.62, 0.63)}
    recs = [{"kind": "dchi_finetune", "task": "sst2", "encoder": e, "mode": m, "eta": eta, "seed": s,
             "score": 100 * a, "metrics": {"accuracy": a}} for (e, m, eta), accs in cells.items() for s, a in enumerate(accs)]
    rows = {(r["encoder"], r["mode"]): r for r in table45(recs)}
    drop = rows[("transformer", "token")]["drop_vs_other_encoder"]
    assert drop["n"] == 3 and drop["mean_diff"] == pytest.approx((0.06 + 0.05 + 0.05) / 3) and drop["p"] < 0.05
    assert rows[("bilstm", "token")]["drop_vs_other_encoder"]["mean_diff"] == pytest.approx(-drop["mean_diff"])
    assert "drop_vs_other_encoder" not in rows[("transformer", "null")]


def test_examples_use_the_papers_sentence_and_count_distinct_outputs(tmp_path, tiny_model):
    out = tmp_path / "ex.json"
    assert main(["dchi", "analyze", "examples", "--out", str(out), "--model", str(tiny_model), "--seed", "0",
                 "--etas", "100", "--eta", "5", "--draws", "200"]) == 0
    rec = json.loads(out.read_text())
    assert rec["sentence"] == "the emotions are raw and will strike a nerve"
    for t in rec["top_outputs"]:
        counts = dict((o, c) for o, c in t["outputs"])
        assert 1 <= t["distinct"] <= 200 and t["distinct"] >= len(t["outputs"])
        assert t["unchanged"] == counts.get(t["token"], 0) or t["unchanged"] <= min(c for c in counts.values())
        assert sum(counts.values()) <= 200
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    page = next((tmp_path / "rep").glob("*.html")).read_text()
    assert "825 distinct outputs" in page and "distinct paper" in page


def test_sequence_rep_separates_freezing_from_noise(tiny_model, tmp_path_factory):
    from conftest import toy_glue_dir
    from privnlu.training import private_finetune as pf

    glue = toy_glue_dir(tmp_path_factory.mktemp("glue"), 32)
    prep = pf.prepare("sst2", model=tiny_model, data_dir=str(glue), max_length=16, sequence_features=True)
    rec = qu2021.sequence_rep(prep, (5.0, 1e4), (0, 1), epochs=1)
    assert rec["analysis"] == "sequence_rep" and len(rec["rows"]) == 2 * 3
    assert [r["eta"] for r in rec["rows"][:3]] == [None, 5.0, 1e4]
    assert all(0 <= r["accuracy"] <= 1 for r in rec["rows"])
    assert rec["noise_norm"]["5.0"] == pytest.approx(rec["dim"] / 5.0)


def test_report_shows_tables_45_beside_the_paper_and_the_gain_against_steps(tmp_path):
    from privnlu.io import write_json_atomic
    from privnlu.report import build_report

    def rec(enc, mode, acc, seed, tag=""):
        return {"kind": "dchi_finetune", "task": "sst2", "encoder": enc, "mode": mode, "eta": 100.0, "seed": seed,
                "tag": tag, "score": 100 * acc, "metrics": {"accuracy": acc}, "train_size": 10, "dev_size": 5,
                "epochs": 1}
    recs = [rec("transformer", "token", 0.50 + s / 100, s) for s in range(3)]
    recs += [rec("transformer", "text", 0.70 + s / 50, s) for s in range(3)]
    recs += [rec("transformer", "token", 0.53 + s / 100, s, tag=f"pt-denoising-{n}") for s in range(3) for n in (1000,)]
    recs += [rec("transformer", "token", 0.56 + s / 100, s, tag="pt-denoising-4000") for s in range(3)]
    recs += [rec("transformer", "text", 0.71 + s / 50, s, tag="pt-text-denoising-1000") for s in range(3)]  # Table 7
    for i, r in enumerate(recs):
        write_json_atomic(tmp_path / "res" / f"{i}.json", r)
    page = build_report([tmp_path / "res"], tmp_path / "rep").read_text()
    assert "beside the paper (Tables 4-5)" in page and "0.7030" in page and "0.5298" in page  # Table 4 eta 100
    assert "gain against pretraining steps" in page and (tmp_path / "rep" / "dchi_pretrain_gain.png").is_file()
    assert "+0.0600" in page  # 4,000 steps: +0.06 on every seed
    from privnlu.report import markdown_report
    gain = next(l for l in markdown_report([tmp_path / "res"]).splitlines() if "| denoising | 4000 |" in l)
    assert "| 3 | +0.0600 | 0.000 |" in gain  # three seeds, the same gain on each: p = 0 (zero variance)
    text = next(l for l in markdown_report([tmp_path / "res"]).splitlines() if "| text-denoising | 1000 |" in l)
    assert text.startswith("| sst2 | text | 100 |") and "| 3 | +0.0100 |" in text  # against the text-mode original


def test_markdown_report_prints_tables_45_with_the_paired_test(tmp_path):
    from privnlu.io import write_json_atomic
    from privnlu.report import markdown_report

    for s in range(3):
        for mode, acc in (("token", 0.50 + s / 100), ("text", 0.70 + s / 50)):
            write_json_atomic(tmp_path / f"{mode}{s}.json", {
                "kind": "dchi_finetune", "task": "sst2", "encoder": "transformer", "mode": mode, "eta": 100.0,
                "seed": s, "tag": "", "score": 100 * acc, "metrics": {"accuracy": acc}, "train_size": 10,
                "dev_size": 5, "epochs": 1, **({"majority": {"accuracy": 50.92}} if s == 2 else {})})
    md = markdown_report([tmp_path])
    assert "beside the paper (Tables 4-5)" in md
    row = next(line for line in md.splitlines() if line.startswith("| sst2 | transformer | text | 100 |"))
    assert "| 0.7030 |" in row and "| 0.7200 |" in row and "+0.2100 (p=" in row  # paper, ours, text - token
    assert "| 0.5092 |" in row  # the majority class, from the one record that carries it
