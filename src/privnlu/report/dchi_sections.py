"""Report sections for d_chi-privacy (Qu et al. 2021): inversion frontier, geometry, examples, plausible deniability,
the calibrated eta and sequence-representation privatization.

Every section has a compact Markdown form for the documentation page (``docs/papers/qu2021.md``); the HTML report
keeps the figures and the fuller tables. Our encoder is MiniLM (384-d), the paper's bert-base (768-d): at equal eta
the two tables do not give equal privacy, and the sections say so beside the paper's values.
"""

from __future__ import annotations

import functools
from functools import partial

from ..paper_values import compare_cells, lookup
from ..paper_values.qu2021 import ETAS as PAPER_ETAS
from ..paper_values.qu2021 import TABLE1, TABLE2_TOP
from .content import Content, Figure, Para, Table, either, html_only, markdown_only
from .markup import Markup
from .registry import section

#: the paper's token-embedding dimension (bert-base)
PAPER_DIM = 768
#: our task -> the paper's dataset it is compared with (MRPC stands in for QQP)
PAPER_TASK = {"sst2": "SST", "qqp": "QQP", "mrpc": "QQP"}


def _dchi(records: list[dict], analysis: str) -> list[dict]:
    return [r for r in records if r.get("kind") == "dchi" and r.get("analysis") == analysis]


def _analysis(analysis: str):
    """A section's record filter: the d_chi records of one analysis."""
    return lambda r: r.get("analysis") == analysis


def _e(eta: float | None) -> str:
    """An eta as it is written (50, 65.55), not as a 2-decimal float."""
    return "" if eta is None else f"{float(eta):g}"


# -- Table 3 -----------------------------------------------------------------------------------------------------------

INVERSION_NOTE = ("Paper: bert-base (768-d) on SST and QQP dev tokens; ours: MiniLM (384-d) on every WordPiece token "
                  "of the SST-2 and MRPC dev sets (MRPC is compared with the paper's QQP). Equal eta is not equal "
                  "privacy across the two tables: the paper's eta scale is tied to its table.")


def _paper_table3(task: str, eta: float):
    pname = PAPER_TASK.get(task)
    return lookup("qu2021", "Table 3", pname, f"eta={eta:g}") if pname else None


def _inversion_plot(recs: list[dict]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for r in recs:
        etas = [x["eta"] for x in r["rows"]]
        ax.plot(etas, [x["accuracy"] for x in r["rows"]], "o-", label=f"{r['task']} ({r['dim']}-d, ours)")
        paper = [(x["eta"], x["paper"]) for x in r["rows"] if x.get("paper") is not None]
        if paper:
            ax.plot(*zip(*paper), "x--", label=f"{r['task']} (paper, bert-base 768-d)")
    ax.set_xlabel("eta")
    ax.set_ylabel("inversion accuracy")
    ax.legend(fontsize=7)
    ax.set_title("nearest-neighbour inversion of M_rep")
    return fig


def _inversion_docs(recs: list[dict]) -> Content:
    """The docs' form: a row per eta, the paper's value, ours and the difference per task (SST first)."""
    order = {"SST": 0, "QQP": 1}
    recs = sorted(recs, key=lambda r: (order.get(PAPER_TASK.get(r["task"], ""), 2), r["task"]))
    sizes = ", ".join(f"{r['task']} {r['tokens']:,} dev tokens" for r in recs if r.get("tokens"))
    etas = sorted({x["eta"] for r in recs for x in r["rows"]})
    headers, cols = ["eta"], []
    for r in recs:
        pname = PAPER_TASK.get(r["task"], "-")
        headers += [f"{pname} paper (bert-base)", f"{r['task']} ours (MiniLM)", "ours - paper"]
        cols.append({x["eta"]: x["accuracy"] for x in r["rows"]})
    rows = [[_e(eta)] + [c for r, acc in zip(recs, cols)
                         for c in compare_cells(acc.get(eta), _paper_table3(r["task"], eta), digits=4)] for eta in etas]
    return [Para(f"{INVERSION_NOTE} Tokens attacked: {sizes}."), Table(headers, rows)]


@section("dchi_inversion", "d_chi: token inversion accuracy against eta (paper Table 3)", order=40, kinds=("dchi",),
         where=_analysis("inversion"))
def dchi_inversion(recs: list[dict]) -> Content:
    rows = [[r["task"], r["dim"], _e(x["eta"]), *compare_cells(x["accuracy"], _paper_table3(r["task"], x["eta"]),
                                                               digits=4)] for r in recs for x in r["rows"]]
    return either([Figure(partial(_inversion_plot, recs), "dchi_inversion", "inversion accuracy against eta"),
                   Para(INVERSION_NOTE), Table(["task", "dim", "eta", "paper", "ours", "ours - paper"], rows)],
                  _inversion_docs(recs))


# -- Figure 3 ----------------------------------------------------------------------------------------------------------

def _geometry_plot(r: dict):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    noise = r["noise"]
    axes[0].plot([x["n_over_eta"] for x in noise], [x["mean_norm"] for x in noise], "o", label="mean ||N|| (Monte Carlo)")
    lim = max(x["n_over_eta"] for x in noise)
    axes[0].plot([0, lim], [0, lim], "k--", lw=0.8, label="n / eta")
    axes[0].set_xlabel("n / eta")
    axes[0].set_ylabel("mean ||N||")
    axes[0].legend(fontsize=7)
    ks = [int(k) for k in r["knn"]]
    axes[1].plot(ks, list(r["knn"].values()), "o-", label="mean k-th NN distance")
    for x in noise:
        axes[1].axhline(x["mean_norm"], lw=0.6, ls=":", color="gray")
        axes[1].text(ks[0], x["mean_norm"], f" eta={x['eta']:g}", fontsize=6, va="bottom")
    axes[1].set_xscale("log")
    axes[1].set_xlabel("k")
    axes[1].set_ylabel("distance")
    axes[1].set_title("k-NN distances vs noise norm (dotted)", fontsize=8)
    return fig


@section("dchi_geometry", "d_chi: noise norm and embedding-table geometry (paper Figure 3)", order=41,
         kinds=("dchi",), where=_analysis("geometry"))
def dchi_geometry(recs: list[dict]) -> Content:
    r = recs[-1]
    noise = r["noise"]
    claim = lookup("qu2021", "Figure 3", "geometry", "claim")
    page = [Para(f"{r['dim']}-d table, k-NN over {r['knn_rows']} regular tokens (k = |V|-1 is the farthest token). "
                 f"Paper (Figure 3, bert-base): {claim.claim if claim else ''}."),
            Figure(partial(_geometry_plot, r), "dchi_geometry", "noise norm against n/eta; k-NN distances"),
            Table(["eta", "mean ||N||", "n / eta", f"n / eta, bert-base (n = {PAPER_DIM})"],
                  [[_e(x["eta"]), x["mean_norm"], x["n_over_eta"], PAPER_DIM / x["eta"]] for x in noise]),
            Table(["k", "mean k-th NN distance"], [[k, v] for k, v in r["knn"].items()])]
    nn1 = r["knn"].get("1")
    rows = [["mean ‖N‖, ours (Monte Carlo)", *[f"{x['mean_norm']:.2f}" for x in noise]],
            [f"n / eta, n = {r['dim']} (MiniLM)", *[f"{x['n_over_eta']:.2f}" for x in noise]],
            [f"n / eta, n = {PAPER_DIM} (the paper's bert-base)", *[f"{PAPER_DIM / x['eta']:.2f}" for x in noise]]]
    if nn1:
        rows.append(["ours: mean ‖N‖ / mean nearest-neighbour distance",
                     *[f"{x['mean_norm'] / nn1:.2f}" for x in noise]])
    docs = [Para(f"Noise: the mean norm of the d_chi noise against n / eta. Table: the mean distance from a regular "
                 f"token of MiniLM's {r['dim']}-d table to its k-th nearest regular token, over "
                 f"{'all' if r['knn_rows'] == 'all' else r['knn_rows']} regular tokens (the last k is the farthest "
                 f"token). The paper's Figure 3 is a plot of bert-base; its text: \"{claim.claim if claim else ''}\"."),
            Table(["eta", *[_e(x["eta"]) for x in noise]], rows),
            Table(["k", *r["knn"].keys()], [["mean distance, ours", *[f"{v:.3f}" for v in r["knn"].values()]]])]
    return either(page, docs)


# -- Tables 1-2 --------------------------------------------------------------------------------------------------------

def _table1_rows(r: dict) -> list[list[object]]:
    return [[_e(x["eta"]), TABLE1.get(int(x["eta"]), "") if float(x["eta"]).is_integer() else "", x["text"]]
            for x in r["privatized"]]


TABLE1_HEADERS = ["eta", "paper (bert-base)", "ours (MiniLM)"]
TABLE2_HEADERS = ["token", "unchanged % paper", "ours", "diff", "distinct paper", "ours", "diff",
                  "our top outputs (count)", "paper's top outputs"]


def _table2_rows(r: dict, top: int | None = None) -> list[list[object]]:
    rows = []
    for t in r["top_outputs"]:
        unchanged = t.get("unchanged")
        paper_u = lookup("qu2021", "Table 2", t["token"], "unchanged") if r["top_eta"] == 100 else None
        paper_d = lookup("qu2021", "Table 2", t["token"], "distinct outputs") if r["top_eta"] == 100 else None
        rows.append([t["token"], *compare_cells(None if unchanged is None else 100.0 * unchanged / r["draws"], paper_u),
                     *compare_cells(t.get("distinct"), paper_d, digits=0),
                     ", ".join(f"{o} ({c})" for o, c in t["outputs"][:top]), ", ".join(TABLE2_TOP.get(t["token"], []))])
    return rows


def _table2_note(r: dict) -> str:
    return (f"Each token of the sentence privatized {r['draws']:,} times at eta = {_e(r['top_eta'])} (Table 2): "
            "'unchanged' = N_w in percent, 'distinct' = S_w, the number of distinct outputs. The paper prints "
            "numbers for 'emotions' only (unchanged 14% of the time, 825 distinct outputs, at eta 100 on "
            "bert-base), and its top outputs without counts.")


@section("dchi_examples", "d_chi: privatized examples (paper Tables 1-2)", order=42, kinds=("dchi",),
         where=_analysis("examples"))
def dchi_examples(recs: list[dict]) -> Content:
    page = [(Para(Markup("Sentence: <i>{}</i>. One M_txt draw per eta (Table 1):").format(r["sentence"])),
             Table(TABLE1_HEADERS, _table1_rows(r)), Para(_table2_note(r)), Table(TABLE2_HEADERS, _table2_rows(r)))
            for r in recs]
    docs: list = []
    shown: list = []
    recs = sorted(recs, key=lambda r: -r["top_eta"])
    for r in recs:
        if r["privatized"] not in shown:  # one Table 1 per distinct set of draws (same seed: the same draws)
            shown.append(r["privatized"])
            docs += [Para(f"Sentence: *{r['sentence']}*. One M_txt draw per eta (Table 1), seed {r.get('seed')}:"),
                     Table(TABLE1_HEADERS, _table1_rows(r))]
    for r in recs:
        docs += [Para(_table2_note(r) + " Our five most frequent outputs are listed."),
                 Table(TABLE2_HEADERS, _table2_rows(r, top=5))]
    return either(page, docs)


# -- Figure 4 ----------------------------------------------------------------------------------------------------------

DENIABILITY_HEADERS = ["eta", "tokens", "draws", "mean N_w", "N_w quartiles", "mean S_w", "S_w quartiles",
                       "certified by one product", "seconds"]
WORST_HEADERS = ["eta", "max N_w paper (bound)", "ours", "ours - bound", "token", "tokens with N_w > 500",
                 "min S_w paper (bound)", "ours", "ours - bound", "token", "tokens with S_w < 500"]
WORST_NOTE = ("The paper's worst-case reading (section 5.3): the largest N_w and the smallest S_w over the "
              "vocabulary. The paper states for eta = 75 (bert-base, 1,000 draws): no token unchanged more than 500 "
              "times, none with fewer than 500 distinct outputs; its values at other etas exist only as a plot. Our "
              "MiniLM eta scale differs from bert-base's (Table 3).")


def _deniability_tables(recs: list[dict]) -> tuple[list[list[object]], list[list[object]]]:
    import numpy as np

    from ..mechanisms.dchi_stats import worst_case

    rows, worst = [], []
    for r in recs:
        w = worst_case(r["n_w"], r["s_w"], r.get("word_ids"))
        qn = "/".join(f"{q:.0f}" for q in np.percentile(r["n_w"], [25, 50, 75]))
        qs = "/".join(f"{q:.0f}" for q in np.percentile(r["s_w"], [25, 50, 75]))
        cert = r.get("certified")
        rows.append([_e(r["eta"]), f"{r['words']:,}", f"{r['draws']:,}", f"{float(np.mean(r['n_w'])):.1f}", qn,
                     f"{float(np.mean(r['s_w'])):.1f}", qs, "" if cert is None else f"{cert:.3f}",
                     f"{r['seconds']:.0f}"])
        pn = lookup("qu2021", "Figure 4", f"eta={r['eta']:g}", "max N_w")
        ps = lookup("qu2021", "Figure 4", f"eta={r['eta']:g}", "min S_w")
        cn, cs = compare_cells(w["max_n_w"], pn, digits=0), compare_cells(w["min_s_w"], ps, digits=0)
        if pn is not None and pn.value is not None:  # the paper states bounds, not values
            cn[0] = f"<= {pn.value:.0f}"
        if ps is not None and ps.value is not None:
            cs[0] = f">= {ps.value:.0f}"
        worst.append([_e(r["eta"]), *cn, _tok(w["argmax_n_w"]), f"{w['n_w_above_500']:,}", *cs,
                      _tok(w["argmin_s_w"]), f"{w['s_w_below_500']:,}"])
    return rows, worst


def _deniability_plot(recs: list[dict]):
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    for r in recs:
        axes[0].hist(r["n_w"], bins=50, histtype="step", label=f"eta={r['eta']:g}")
        axes[1].hist(r["s_w"], bins=50, histtype="step", label=f"eta={r['eta']:g}")
    etas = [r["eta"] for r in recs]
    for key, mark, name in (("n_w", "o-", "N_w"), ("s_w", "s-", "S_w")):
        q = np.array([np.percentile(r[key], [25, 50, 75]) for r in recs])
        axes[2].plot(etas, q[:, 1], mark, label=f"median {name}")
        axes[2].fill_between(etas, q[:, 0], q[:, 2], alpha=0.2)
    axes[0].set_xlabel(f"N_w (of {recs[0]['draws']} draws)")
    axes[1].set_xlabel("S_w (distinct outputs)")
    axes[2].set_xlabel("eta")
    axes[2].set_ylabel("count (median, quartiles)")
    axes[0].set_ylabel("tokens (log scale)")
    for ax in axes[:2]:
        ax.set_yscale("log")
    fig.tight_layout()
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    return fig


@section("dchi_deniability", "d_chi: plausible deniability N_w and S_w (paper Figure 4)", order=43, kinds=("dchi",),
         where=_analysis("deniability"))
def dchi_deniability(recs: list[dict]) -> Content:
    recs = sorted(recs, key=lambda r: r["eta"])
    rows, worst = _deniability_tables(recs)
    return [html_only(Figure(partial(_deniability_plot, recs), "dchi_deniability", "N_w and S_w over the vocabulary")),
            markdown_only(Para(
                "N_w: how often a token comes back unchanged; S_w: its number of distinct outputs; over every regular "
                "token of MiniLM's vocabulary (exact search; 'certified by one product' is the share of (token, draw) "
                "pairs settled by the first step of the search). Quartiles are 25th/50th/75th percentiles over "
                "tokens.")),
            Table(DENIABILITY_HEADERS, rows), Para(WORST_NOTE), Table(WORST_HEADERS, worst)]


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from transformers import AutoTokenizer

    from ..models.encoder import default_model_path

    return AutoTokenizer.from_pretrained(str(default_model_path()))


def _tok(token_id: int) -> str:
    """A vocabulary id as its token (packaged tokenizer; the deniability runs use its table), else the id."""
    try:
        return str(_tokenizer().convert_ids_to_tokens(int(token_id)))
    except Exception:  # noqa: BLE001 - the report still renders without the model
        return str(token_id)


# -- the calibrated eta (beyond the paper) -----------------------------------------------------------------------------

CALIBRATION_HEADERS = ["target inversion accuracy", "the paper's eta for it (bert-base, Table 3)", "our eta (MiniLM)",
                       "our accuracy at that eta", "dev tokens", "dim"]


def _paper_eta_for(target: float, task: str) -> str:
    """The paper's eta whose Table 3 accuracy (on the task's paper dataset) is ``target``, if one is."""
    for eta in PAPER_ETAS:
        v = lookup("qu2021", "Table 3", PAPER_TASK.get(task, "SST"), f"eta={eta}")
        if v is not None and v.value is not None and abs(v.value - target) < 5e-5:
            return f"{eta} ({PAPER_TASK.get(task, 'SST')})"
    return "-"


def _calibration_rows(records: list[dict]) -> list[list[object]]:
    """One row per calibration record."""
    return [[f"{r['target_accuracy']:.4f}", _paper_eta_for(r["target_accuracy"], r.get("tokens_from") or "sst2"),
             f"{r['eta']:.2f}", f"{r['accuracy_at_eta']:.4f}",
             f"{r['tokens']:,}" + (f" ({r['tokens_from']})" if r.get("tokens_from") else ""), r["dim"]]
            for r in records]


CALIBRATION_NOTE = ("The eta at which nearest-neighbour inversion of MiniLM's M_rep recovers the target share of "
                    "dataset tokens (bisection over eta with common random numbers).")


@section("dchi_calibration", "d_chi: calibrated eta for this model", order=44, kinds=("dchi",),
         where=_analysis("calibration"))
def dchi_calibration(recs: list[dict]) -> Content:
    return [Para(CALIBRATION_NOTE), Table(CALIBRATION_HEADERS, _calibration_rows(recs))]


# -- section 6.2: sequence-representation privatization (beyond the paper's tables) ----------------------------------

SEQ_HEADERS = ["input to the frozen head", "E‖N‖ = n/eta", "accuracy % per seed", "mean", "vs clean frozen head",
               "vs fine-tuned Null Privacy"]


def _null_runs(records: list[dict], seq: dict) -> dict[int, float]:
    """The fine-tuned transformer's Null Privacy accuracy (%) per seed, from the untagged fine-tuning records of the
    same task, training examples, dev examples and epochs as the sequence-rep record ``seq``."""
    return {int(r["seed"]): 100.0 * r["metrics"].get("accuracy", r["score"] / 100) for r in records
            if r.get("kind") == "dchi_finetune" and r.get("task") == seq["task"] and r.get("mode") == "null"
            and r.get("encoder") == "transformer" and not r.get("tag") and r.get("seed") is not None
            and (r.get("train_size"), r.get("dev_size"), r.get("epochs"))
            == (seq["train_size"], seq["dev_size"], seq["epochs"])}


def _bert_base_match(dim: int, eta: float) -> str:
    """' (bert-base's noise norm at eta E)' when dim / eta equals 768 / E for one of the paper's etas."""
    for pe in PAPER_ETAS:
        if abs(dim / eta - PAPER_DIM / pe) / (PAPER_DIM / pe) < 0.01 and dim != PAPER_DIM:
            return f" (= bert-base's noise norm at eta {pe})"
    return ""


def _sequence_tables(records: list[dict]) -> list[tuple[str, list[list[object]]]]:
    claim = lookup("qu2021", "Section 6.2", "sequence eta=175", "drop vs null")
    out = []
    for r in _dchi(records, "sequence_rep"):
        by: dict = {}
        for x in r["rows"]:
            by.setdefault(x["eta"], {})[x["seed"]] = 100.0 * x["accuracy"]
        mean = lambda d: sum(d.values()) / len(d)  # noqa: E731
        clean = mean(by[None]) if None in by else None
        null = _null_runs(records, r)
        null_mean = mean(null) if null else None
        rows = []
        for eta in [None, *sorted(e for e in by if e is not None)]:
            if eta not in by:
                continue
            m = mean(by[eta])
            rows.append(["clean (no noise)" if eta is None else f"eta {_e(eta)}{_bert_base_match(r['dim'], eta)}",
                         "0" if eta is None else f"{r['noise_norm'].get(str(eta), r['dim'] / eta):.2f}",
                         " / ".join(f"{by[eta][s]:.2f}" for s in sorted(by[eta])), f"{m:.2f}",
                         "" if clean is None or eta is None else f"{m - clean:+.2f}",
                         "" if null_mean is None else f"{m - null_mean:+.2f}"])
        if null:
            rows.append(["fine-tuned Null Privacy (transformer, no noise)", "0",
                         " / ".join(f"{null[s]:.2f}" for s in sorted(null)), f"{null_mean:.2f}", "", ""])
        if claim is not None:
            rows.append(["paper: eta 175 (bert-base [CLS], 768-d)", f"{PAPER_DIM / 175:.2f}", "", "", "",
                         f"-{claim.value:.0f} (claim)"])
        note = (f"{r['task']}: the frozen MiniLM [CLS] vector ({r['dim']}-d, mean norm {r['rep_norm_mean']:.2f}, "
                f"sd {r['rep_norm_sd']:.2f}) privatized with M_seq, and a head (one hidden layer) trained on it by the "
                f"provider; {r['train_size']:,} train / {r['dev_size']:,} dev examples, {r['epochs']} epochs. The "
                "clean row trains the same head on noise-free vectors: the cost of freezing the encoder alone. ")
        note += ("'vs fine-tuned Null Privacy': against the fine-tuned transformer's Null Privacy runs among the "
                 "records shown with the same training and dev examples and epochs, the paper's comparison. "
                 if null else "")
        if claim is not None:
            note += f"Paper, section 6.2: \"{claim.claim}\" (its Null Privacy is fine-tuned bert-base, 0.9289 on SST)."
        out.append((note, rows))
    return out


@section("dchi_sequence_rep", "d_chi: sequence-representation privatization (paper section 6.2)", order=44,
         kinds=("dchi", "dchi_finetune"))
def dchi_sequence_rep(records: list[dict]) -> Content | None:
    return [(Para(note), Table(SEQ_HEADERS, rows)) for note, rows in _sequence_tables(records)] or None
