"""Report sections for attacks on instance encoding (results with kind "attack")."""

from __future__ import annotations

import html

from ..attacks.leakage import METRICS
from .registry import Context, md_table, section, table

TITLES = {
    "search": "similarity search (TextHide section 4.4, Table 3)",
    "invert": "representation reconstruction + search (TextHide appendix C.3, Table 8)",
}


def _attacks(records: list[dict], names: set[str]) -> list[dict]:
    return [r for r in records if r.get("kind") == "attack" and r.get("attack") in names and r.get("mode") != "payload"]


def _paper_rows(r: dict) -> tuple[str, list[str], list[list[object]]] | None:
    """TextHide Table 3 (search) / Table 8 (inversion) beside ours: (source, header, rows) per metric and
    condition, paper / ours / diff; None where the paper has no such table."""
    from .. import paper_values as pv
    from ..paper_values.huang2020_search import CONDITION_COLUMNS, METRIC_ROWS, source

    src = source(3 if r["attack"] == "search" else 8, r["task"])
    conds = [c for c in r["conditions"] if c in CONDITION_COLUMNS]
    if not conds or not pv.values("huang2020", src):
        return None
    rows = []
    for m in METRICS:
        row: list[object] = [m]
        for c in conds:
            row += pv.compare_cells(r["conditions"][c]["metrics"].get(m), pv.lookup("huang2020", src, METRIC_ROWS[m], CONDITION_COLUMNS[c]))
        rows.append(row)
    return src, ["metric"] + [f"{c} {w}" for c in conds for w in ("paper", "ours", "diff")], rows


def _paper_block(r: dict) -> str:
    paper = _paper_rows(r)
    if paper is None:
        return ""
    src, head, rows = paper
    return f"<p class='note'>Paper: Huang et al. 2020, {html.escape(src)} (x100).</p>" + table(head, rows)


EXAMPLE_HEAD = ["query #", "query", "label", "condition", "retrieved", "label", "exact"]


def _example_rows(r: dict) -> list[list[object]]:
    """TextHide Tables 4 (search) / 7 (inversion): example queries and what each condition retrieved."""
    rows = [[e["query_number"], e["query"], e.get("query_label"), name, e["retrieved"], e.get("retrieved_label"),
             "yes" if e["exact"] else "no"] for name, c in r["conditions"].items() for e in c.get("examples", [])]
    return sorted(rows, key=lambda x: (x[0], x[3]))


def _examples_note(r: dict) -> str:
    which = "Table 4" if r["attack"].startswith("search") else "Table 7"
    return (f"Example queries (as TextHide {which}): the first queries of the run, and the first query that "
            f"retrieved its own sentence where none of those did.")


def _examples_block(r: dict) -> str:
    rows = _example_rows(r)
    return f"<p class='note'>{_examples_note(r)}</p>" + table(EXAMPLE_HEAD, rows) if rows else ""


def _leakage_rows(r: dict) -> list[list[object]]:
    return [[name, c["m"], c["k"], *[c["metrics"].get(m) for m in METRICS]] for name, c in r["conditions"].items()]


def _leakage_markdown(records: list[dict]) -> str | None:
    """The leakage tables, the paper's beside them, and the example queries, as Markdown (``report --markdown``)."""
    parts = []
    for r in _attacks(records, set(TITLES)):
        tm = r["threat_model"]
        parts.append(f"**{r['task']}: {TITLES[r['attack']]}** (threat model {tm['name']}; {r['n_queries']} queries, "
                     f"corpus {r.get('corpus')}, {r.get('corpus_size')} sentences)\n\n"
                     + md_table(["condition", "m", "k", *METRICS], _leakage_rows(r)))
        paper = _paper_rows(r)
        if paper is not None:
            parts.append(f"Paper: Huang et al. 2020, {paper[0]} (x100).\n\n" + md_table(paper[1], paper[2]))
        examples = _example_rows(r)
        if examples:
            parts.append(_examples_note(r) + "\n\n" + md_table(EXAMPLE_HEAD, examples))
    return "\n\n".join(parts) or None


@section("attack_leakage", "Attacks: leakage of privatized representations", order=40, markdown=_leakage_markdown)
def attack_leakage(records: list[dict], ctx: Context) -> str | None:
    runs = _attacks(records, set(TITLES))
    if not runs:
        return None
    out = ("<p>Each row attacks one condition; metrics are means over the queries (x100): exact match (identity), word "
           "Jaccard, TF-IDF cosine, same label and SBERT cosine between the retrieved and the true sentence. "
           "The attacker gets only what the stated threat model grants.</p>")
    for r in runs:
        rows = _leakage_rows(r)
        tm = r["threat_model"]
        out += (f"<h3>{html.escape(r['task'])}: {html.escape(TITLES[r['attack']])}</h3>"
                f"<p class='note'>threat model <b>{html.escape(tm['name'])}</b>: grants {html.escape(', '.join(tm['grants']))}; "
                f"{r['n_queries']} queries, corpus {html.escape(str(r.get('corpus')))} ({r.get('corpus_size')} sentences).</p>"
                + table(["condition", "m", "k", *METRICS], rows) + _paper_block(r) + _examples_block(r))
    return out


def _examples_markdown(records: list[dict]) -> str | None:
    """Example queries kept on their own (``huang2020-table4``: a search run's queries and answers)."""
    parts = [f"**{r['task']}** ({r['n_queries']} queries of the search in {r.get('from')}, corpus {r.get('corpus')}, "
             f"{r.get('corpus_size')} sentences). {_examples_note(r)}\n\n" + md_table(EXAMPLE_HEAD, _example_rows(r))
             for r in _attacks(records, {"search-examples"})]
    return "\n\n".join(parts) or None


@section("attack_examples", "Attacks: example queries and answers (TextHide Table 4)", order=40,
         markdown=_examples_markdown)
def attack_examples(records: list[dict], ctx: Context) -> str | None:
    runs = _attacks(records, {"search-examples"})
    return "".join(f"<h3>{html.escape(r['task'])}</h3>" + _examples_block(r) for r in runs) or None


REC_INTRO = (
    "<p>Methods: <b>paper-greedy</b> is the paper's clustering rule (grow each cluster by the encoding with the "
    "largest mean similarity to its members, then audit) on the paper's pair network, a vanilla MLP on the stacked "
    "pair trained with Adam at lr 0.01 (widths, epochs and the seeding are ours); <b>threshold</b>, <b>clique</b> "
    "and <b>nmf</b> are privnlu's own clusterings on privnlu's factorised pair network. All methods then use "
    "privnlu's alternating-projection least squares (the paper uses gradient descent). Success, % of the private "
    "originals: <b>lenient</b> = the recovered vector's nearest of the n private originals is the true one (chance "
    "1/n); <b>strict</b> = nearest among the originals plus the stated number of same-split distractors; "
    "<b>sentence</b> = the nearest sentence of the whole candidate corpus is the true sentence. The paper's "
    "Table 1 does not say which pool it judges against; it is compared here with <b>lenient</b>, the most generous "
    "of the three (strict and sentence are shown beside it).</p>")


@section("attack_reconstruction", "Attacks: reconstruction of TextHide encodings (Xie & Hong 2021)", order=41)
def attack_reconstruction(records: list[dict], ctx: Context) -> str | None:
    from .. import paper_values as pv
    from ..paper_values.xie2021 import TASK_ROWS, table1_column

    from .dp_attack_sections import is_dp_release

    runs = [r for r in _attacks(records, {"reconstruct"}) if not is_dp_release(r)]  # DP releases: Figure 2's section
    if not runs:
        return None
    out = REC_INTRO
    pair_rows = []
    for r in runs:
        methods = sorted({m for c in r["conditions"].values() for m in c["methods"]})
        rows = []
        for name, c in r["conditions"].items():
            paper = pv.lookup("xie2021", "Table 1", TASK_ROWS.get(r["task"], r["task"]), table1_column(int(c["k"]))) \
                if str(c["m"]) == "1" else None
            for m in methods:
                v = c["methods"].get(m)
                if v is None:
                    continue
                lenient = v.get("success_lenient", v.get("success"))
                rows.append([name, c["m"], c["k"], c["n_encodings"], m, *pv.compare_cells(lenient, paper),
                             v.get("success_strict"), v.get("success_sentence"), v.get("purity"), v.get("cosine_to_truth")])
            for net, acc in (c.get("pair_accuracy") or {}).items():
                pair_rows.append([r["task"], name, "paper's vanilla MLP" if net == "mlp" else "privnlu factorised",
                                  *pv.compare_cells(100 * acc["heldout"], pv.lookup("xie2021", "Section 4.2", "pair network", "accuracy")),
                                  round(100 * acc["release"]["balanced_accuracy"], 1)])
        dis = next((v.get("n_distractors") for c in r["conditions"].values() for v in c["methods"].values() if v.get("n_distractors")), None)
        out += (f"<h3>{html.escape(r['task'])}: {r['n_queries']} private examples x {r.get('epochs')} epochs"
                f"{' (k-NN graph, ' + str(r['conditions'][next(iter(r['conditions']))].get('graph_neighbours')) + ' neighbours)' if any(c.get('graph_neighbours') for c in r['conditions'].values()) else ''}</h3>"
                f"<p class='note'>strict pool: originals + {dis} distractors; sentence corpus: {html.escape(str(r.get('corpus')))} "
                f"({r.get('corpus_size')} sentences); seed {r.get('experiment_seed')}.</p>"
                + table(["condition", "m", "k", "encodings", "method", "paper (Table 1)", "lenient %", "diff", "strict %",
                         "sentence %", "purity", "cos"], rows))
    if pair_rows:
        out += ("<h3>Pair networks: accuracy on pairs \"share an original?\"</h3><p class='note'>held out: a fresh release "
                "the attacker simulates itself (balanced, as its training pairs); real release: balanced accuracy on the "
                "attacked release (auditor side). Paper: Xie &amp; Hong 2021, section 4.2 (its evaluation pairs are not "
                "described).</p>" + table(["task", "condition", "network", "paper %", "held-out %", "diff", "real release %"], pair_rows))
    return out


def _scale_setting(r: dict) -> str:
    """The attack's setting in one label: the pairs it scores and its nmf repair passes."""
    graph = f"k-NN graph {r['graph_neighbours']}" if r.get("graph_neighbours") else "all pairs"
    rounds, iters = r.get("nmf_repair_rounds", 1), r.get("nmf_repair_iters")
    return graph + ("" if iters is None else f", repair {rounds} x {iters}")


@section("attack_reconstruction_scaling", "Attacks: reconstruction at the size of a real release", order=42)
def attack_reconstruction_scaling(records: list[dict], ctx: Context) -> str | None:
    runs = sorted((r for r in records if r.get("kind") == "attack" and r.get("attack") == "reconstruct-scale"),
                  key=lambda r: (r.get("task", ""), r["n_private"]))
    if not runs:
        return None
    rows = []
    curves: dict[tuple[str, str, str], dict[int, list[float]]] = {}
    for r in runs:
        release = f"{r['sample_seed']} / {r['defender_seed']}" if "sample_seed" in r else "-"
        setting = _scale_setting(r)
        for m, s in r["success"].items():
            rows.append([r.get("task"), r["n_private"], r["n_encodings"], setting, release, m,
                         s.get("success_lenient"), s.get("success_strict"), s.get("success_sentence"),
                         (r.get("claimed") or {}).get(m), r["attack_total_seconds"], r.get("threads", 1), r["peak_rss_gib"]])
            if s.get("success_lenient") is not None:
                curves.setdefault((r.get("task", ""), setting, m), {}).setdefault(r["n_private"], []).append(
                    s["success_lenient"])
    out = ("<p>Success against the number of private examples (50 encodings each); pairs from a k-NN graph of the "
           "abs() features (FAISS), clustering and solving on the sparse graph. Release: private-sample seed / "
           "defender seed (experiment-only seeds; '-': records that do not state them). Claimed: originals that some group "
           "stands for, an upper bound on every success metric. Wall seconds on the stated threads and peak resident "
           "memory of the benchmark process (benchmarks/bench_reconstruction.py). The curve is lenient success, the mean "
           "over releases where a setting has several (bars: minimum to maximum).</p>"
           + table(["task", "n", "encodings", "setting", "release", "method", "lenient %", "strict %", "sentence %",
                    "claimed %", "seconds", "threads", "peak GiB"], rows))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for (task, setting, m), by_n in sorted(curves.items()):
            ns = sorted(by_n)
            mean = [sum(by_n[n]) / len(by_n[n]) for n in ns]
            lo = [mu - min(by_n[n]) for n, mu in zip(ns, mean)]
            hi = [max(by_n[n]) - mu for n, mu in zip(ns, mean)]
            ax.errorbar(ns, mean, yerr=[lo, hi], fmt="-o", capsize=3, label=f"{task} {m}, {setting}")
        ax.set_xscale("log")
        ax.set_xlabel("private examples n (x 50 encodings)")
        ax.set_ylabel("lenient success %")
        ax.legend(fontsize=6)
        out += ctx.figure(fig, "reconstruction_scaling", "success vs n")
    except ImportError:
        pass
    return out


@section("attack_payload", "Attacks on a user's own encoding file", order=43)
def attack_payload(records: list[dict], ctx: Context) -> str | None:
    runs = [r for r in records if r.get("kind") == "attack" and r.get("mode") == "payload"]
    if not runs:
        return None
    rows = []
    for r in runs:
        meta = r.get("payload_meta", {})
        if r["attack"] == "search":
            rows.append([r["payload"], "search", meta.get("m"), meta.get("k"), r["n_encodings"], "-", r.get("mean_cosine")])
        else:
            for m, v in r.get("methods", {}).items():
                rows.append([r["payload"], f"reconstruct ({m})", meta.get("m"), meta.get("k"), r["n_encodings"], v["groups"], v["mean_cosine"]])
    return ("<p>No key is read, so there is no success rate: the mean cosine between each answer (an encoding, or a "
            "recovered original) and its nearest candidate sentence's representation. High values mean the encodings "
            "map back to specific sentences; the per-item answers are in the results JSON.</p>"
            + table(["file", "attack", "m", "k", "encodings", "recovered originals", "mean cosine"], rows))
