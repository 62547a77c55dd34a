"""Report sections for attacks on instance encoding (results with kind "attack")."""

from __future__ import annotations

from functools import partial

from ..attacks.representation.leakage import METRICS
from ..schemas import display_name
from .content import Content, Figure, Heading, Para, Table, either, html_only, note
from .markup import Markup
from .registry import section

TITLES = {
    "search": "similarity search (TextHide section 4.4, Table 3)",
    "invert": "representation reconstruction + search (TextHide appendix C.3, Table 8)",
}


def _attack(*names: str):
    """A section's record filter: attack results of one of ``names`` (a user's own file: its own section)."""
    return lambda r: r.get("attack") in names and r.get("mode") != "payload"


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


def _paper_block(r: dict) -> Content:
    """TextHide Table 3 / 8 beside ours (nothing where the paper has no such table)."""
    paper = _paper_rows(r)
    if paper is None:
        return []
    src, head, rows = paper
    return [either(note(f"Paper: Huang et al. 2020, {src} (x100)."), Para(f"Paper: Huang et al. 2020, {src} (x100).")),
            Table(head, rows)]


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


def _examples_block(r: dict) -> Content:
    rows = _example_rows(r)
    return [either(note(_examples_note(r)), Para(_examples_note(r))), Table(EXAMPLE_HEAD, rows)] if rows else []


def _leakage_rows(r: dict) -> list[list[object]]:
    return [[name, c["m"], c["k"], *[c["metrics"].get(m) for m in METRICS]] for name, c in r["conditions"].items()]


LEAKAGE_NOTE = ("Each row attacks one condition; metrics are means over the queries (x100): exact match (identity), "
                "word Jaccard, TF-IDF cosine, same label and SBERT cosine between the retrieved and the true sentence. "
                "The attacker gets only what the stated threat model grants.")


@section("attack_leakage", "Attacks: leakage of privatized representations", order=40, kinds=("attack",),
         where=_attack(*TITLES))
def attack_leakage(runs: list[dict]) -> Content:
    """The leakage tables, the paper's beside them, and the example queries."""
    out: list = [html_only(Para(LEAKAGE_NOTE))]
    for r in runs:
        tm = r["threat_model"]
        out += [either([Heading(3, f"{r['task']}: {TITLES[r['attack']]}"),
                        note(Markup("threat model <b>{}</b>: grants {}; {} queries, corpus {} ({} sentences).").format(
                            tm["name"], ", ".join(tm["grants"]), r["n_queries"], str(r.get("corpus")),
                            r.get("corpus_size")))],
                       Para(f"**{r['task']}: {TITLES[r['attack']]}** (threat model {tm['name']}; {r['n_queries']} "
                            f"queries, corpus {r.get('corpus')}, {r.get('corpus_size')} sentences)")),
                Table(["condition", "m", "k", *METRICS], _leakage_rows(r)), _paper_block(r), _examples_block(r)]
    return out


@section("attack_examples", "Attacks: example queries and answers (TextHide Table 4)", order=40, kinds=("attack",),
         where=_attack("search-examples"))
def attack_examples(runs: list[dict]) -> Content:
    """Example queries kept on their own (``huang2020-table4``: a search run's queries and answers)."""
    return [(either(Heading(3, r["task"]),
                    Para(f"**{r['task']}** ({r['n_queries']} queries of the search in {r.get('from')}, corpus "
                         f"{r.get('corpus')}, {r.get('corpus_size')} sentences). {_examples_note(r)}")),
             either(_examples_block(r), Table(EXAMPLE_HEAD, _example_rows(r)))) for r in runs]


REC_INTRO = Markup(
    "Methods: <b>paper-greedy</b> is the paper's clustering rule (grow each cluster by the encoding with the "
    "largest mean similarity to its members, then audit) on the paper's pair network, a vanilla MLP on the stacked "
    "pair trained with Adam at lr 0.01 (widths, epochs and the seeding are ours); <b>threshold</b>, <b>clique</b> "
    "and <b>nmf</b> are privnlu's own clusterings on privnlu's factorised pair network. All methods then use "
    "privnlu's alternating-projection least squares (the paper uses gradient descent). Success, % of the private "
    "originals: <b>lenient</b> = the recovered vector's nearest of the n private originals is the true one (chance "
    "1/n); <b>strict</b> = nearest among the originals plus the stated number of same-split distractors; "
    "<b>sentence</b> = the nearest sentence of the whole candidate corpus is the true sentence. The paper's "
    "Table 1 does not say which pool it judges against; it is compared here with <b>lenient</b>, the most generous "
    "of the three (strict and sentence are shown beside it). <b>purity</b>: the share of a group's members that "
    "contain the original the group stands for; <b>cos</b>: the mean cosine between a recovered vector's absolute "
    "values and its original's.")


METHOD_ORDER = ("paper-greedy", "threshold", "clique", "nmf")


def _method_key(m: str) -> tuple[int, str]:
    return (METHOD_ORDER.index(m) if m in METHOD_ORDER else len(METHOD_ORDER), m)


def _plain_reconstruction(r: dict) -> bool:
    from .dp_attack_sections import is_dp_release

    return _attack("reconstruct")(r) and not is_dp_release(r)  # DP releases: Figure 2's section


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _spread(vals: list[float], digits: int = 1, each: bool = True) -> str:
    """One value as is; several (one per seed) as ``mean ± sd (a / b / c)``, so the spread is never hidden."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    if len(vals) == 1:
        return f"{vals[0]:.{digits}f}"
    import statistics

    out = f"{statistics.mean(vals):.{digits}f} ± {statistics.stdev(vals):.{digits}f}"
    return out + (f" ({' / '.join(f'{v:.{digits}f}' for v in vals)})" if each else "")


def _lenient(v: dict) -> float | None:
    return v.get("success_lenient", v.get("success"))


def _mk(c: dict) -> str:
    return f"({c['m']}, {c['k']})"


def _reconstruction_docs(runs: list[dict]) -> Content:
    """The docs' form: per task, lenient success by condition and method beside the paper's Table 1 (one compact
    table), then every metric; releases of several experiment seeds are averaged (mean ± sample sd, each seed
    listed)."""
    import statistics

    from .. import paper_values as pv
    from ..paper_values.xie2021 import TASK_ROWS, table1_column

    parts: list = []
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        dis = next((v.get("n_distractors") for c in r["conditions"].values() for v in c["methods"].values()
                    if v.get("n_distractors")), None)
        key = (r["task"], r["n_queries"], r.get("epochs"), dis, r.get("corpus"), r.get("corpus_size"),
               any(c.get("graph_neighbours") for c in r["conditions"].values()))
        groups.setdefault(key, []).append(r)
    pair_rows = []
    figure1 = False
    for (task, n, epochs, dis, corpus, corpus_size, graph), recs in groups.items():
        # (m, k) -> method -> list of per-seed method results; (m, k) -> network -> per-seed accuracies
        cells: dict[tuple[int, int], dict[str, list[dict]]] = {}
        nets: dict[tuple[int, int], dict[str, list[dict]]] = {}
        conds: dict[tuple[int, int], dict] = {}
        for r in recs:
            for c in r["conditions"].values():
                mk = (int(c["m"]), int(c["k"]))
                conds.setdefault(mk, c)
                for m, v in c["methods"].items():
                    cells.setdefault(mk, {}).setdefault(m, []).append(v)
                for net, acc in (c.get("pair_accuracy") or {}).items():
                    nets.setdefault(mk, {}).setdefault(net, []).append(acc)
        order = sorted(cells)
        methods = sorted({m for mk in order for m in cells[mk]}, key=_method_key)
        seeds = sorted({r.get("experiment_seed") for r in recs if r.get("experiment_seed") is not None})
        paper = {mk: pv.lookup("xie2021", "Table 1", TASK_ROWS.get(task, task), table1_column(mk[1])) if mk[0] == 1
                 else None for mk in order}
        figure1 |= len({mk[0] for mk in order}) > 1  # a sweep over the mask pool size
        runs_per = max(len(v) for mk in order for v in cells[mk].values())
        head = (f"**{task}**: {n} private examples x {epochs} encodings each"
                f"{' (k-NN graph)' if graph else ''}; strict pool: the originals + {dis} distractors; sentence "
                f"corpus: {corpus} ({corpus_size} sentences); experiment seed{'s' if len(seeds) > 1 else ''} "
                f"{', '.join(map(str, seeds))}"
                + (f" (mean ± sample sd over the {runs_per} seeds, each seed in brackets)" if runs_per > 1 else "")
                + ".")
        has_paper = any(v is not None for v in paper.values())  # none for releases off Table 1's grid
        pivot = [["paper (Table 1)", *[_pct(paper[mk].value) if paper[mk] is not None else "-" for mk in order]]] \
            if has_paper else []
        for m in methods:
            pivot.append([m, *[_spread([_lenient(v) for v in cells[mk].get(m, [])], each=False) for mk in order]])
        parts.append(Para(head))
        if len(order) > 1:  # one condition: the table of every metric says it all
            parts += [Para("Lenient success, % of the originals:"),
                      Table(["method \\ (m, k)", *[_mk(conds[mk]) for mk in order]], pivot)]
        rows = []
        for mk in order:
            for m in methods:
                vs = cells[mk].get(m)
                if not vs:
                    continue
                lenient = [_lenient(v) for v in vs]
                p, _, d = pv.compare_cells(statistics.mean(lenient), paper[mk])
                rows.append([_mk(conds[mk]), m, *([p] if has_paper else []), _spread(lenient), *([d] if has_paper else []),
                             _spread([v.get("success_strict") for v in vs], each=False),
                             _spread([v.get("success_sentence") for v in vs], each=False),
                             _spread([v.get("purity") for v in vs], 2, each=False),
                             _spread([v.get("cosine_to_truth") for v in vs], 2, each=False)])
        head = ["(m, k)", "method", "paper (Table 1)", "lenient %", "diff", "strict %", "sentence %", "purity", "cos"]
        parts += [Para("Every metric:"),
                  Table([h for h in head if has_paper or h not in ("paper (Table 1)", "diff")], rows)]
        for mk in order:
            for net, accs in sorted(nets.get(mk, {}).items(), reverse=True):
                held = [100 * a["heldout"] for a in accs]
                p, _, d = pv.compare_cells(statistics.mean(held),
                                           pv.lookup("xie2021", "Section 4.2", "pair network", "accuracy"))
                pair_rows.append([task, _mk(conds[mk]), "paper's vanilla MLP" if net == "mlp" else "privnlu factorised",
                                  p, _spread(held), d,
                                  _spread([100 * a["release"]["balanced_accuracy"] for a in accs])])
    if figure1:
        claim = next((v.claim for v in pv.values("xie2021", "Figure 1") if v.claim), "")
        parts.append(Para("The paper's Table 1 has m = 1 only; for m > 1 (its Figure 1, an image without values) its "
                          f"text claims: {claim}."))
    if pair_rows:
        parts += [Para("**Pair networks: accuracy on pairs \"share an original?\"** Held out: a fresh release the "
                       "attacker simulates itself (balanced, as its training pairs); real release: balanced accuracy "
                       "on the attacked release (auditor side). Paper: Xie & Hong 2021, section 4.2 (its evaluation "
                       "pairs are not described)."),
                  Table(["task", "(m, k)", "network", "paper %", "held-out %", "diff", "real release %"], pair_rows)]
    return parts


@section("attack_reconstruction", "Attacks: reconstruction of TextHide encodings (Xie & Hong 2021)", order=41,
         kinds=("attack",), where=_plain_reconstruction)
def attack_reconstruction(runs: list[dict]) -> Content:
    return [Para(REC_INTRO), either(_reconstruction_page(runs), _reconstruction_docs(runs))]


def _reconstruction_page(runs: list[dict]) -> Content:
    """The page's form: per release, every condition and method, and the pair networks' accuracy."""
    from .. import paper_values as pv
    from ..paper_values.xie2021 import TASK_ROWS, table1_column

    out: list = []
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
        graph = next((c.get("graph_neighbours") for c in r["conditions"].values() if c.get("graph_neighbours")), None)
        first = r["conditions"][next(iter(r["conditions"]))].get("graph_neighbours")
        out += [Heading(3, f"{r['task']}: {r['n_queries']} private examples x {r.get('epochs')} encodings each"
                           + (f" (k-NN graph, {first} neighbours)" if graph else "")),
                note(f"strict pool: originals + {dis} distractors; sentence corpus: {r.get('corpus')} "
                     f"({r.get('corpus_size')} sentences); seed {r.get('experiment_seed')}."),
                Table(["condition", "m", "k", "encodings", "method", "paper (Table 1)", "lenient %", "diff", "strict %",
                       "sentence %", "purity", "cos"], rows)]
    if pair_rows:
        out += [Heading(3, 'Pair networks: accuracy on pairs "share an original?"'),
                note("held out: a fresh release the attacker simulates itself (balanced, as its training pairs); real "
                     "release: balanced accuracy on the attacked release (auditor side). Paper: Xie & Hong 2021, "
                     "section 4.2 (its evaluation pairs are not described)."),
                Table(["task", "condition", "network", "paper %", "held-out %", "diff", "real release %"], pair_rows)]
    return out


PM_SCORERS = {"mlp": "the paper's vanilla MLP", "factorised": "privnlu's factorised network",
              "true": "true share matrix (oracle)"}
PM_RULES = {"paper-greedy": "paper-greedy (Table 1's rule)", "fair-greedy": "fair-greedy (duplicate control)"}


def _paper_method_blocks(runs: list[dict]) -> list[tuple[str, list[str], list[list[object]]]]:
    """The paper's method run fairly (``reconstruct-paper-method`` records): per task, lenient success of each
    clustering rule on each pair scorer beside the paper's Table 1 (mean ± sample sd over seeds, each seed
    listed), originals found, and each pair network's accuracy on balanced held-out pairs and on the release."""
    import statistics

    from .. import paper_values as pv
    from ..paper_values.xie2021 import TASK_ROWS, table1_column

    parts = []
    by_task: dict[tuple, list[dict]] = {}
    for r in runs:
        key = (r["task"], r["n_queries"], r["epochs"], r["config"]["pair_data"], r["aux_size"])
        by_task.setdefault(key, []).append(r)
    paper_pair = pv.lookup("xie2021", "Section 4.2", "pair network", "accuracy")
    pair_rows = []
    for (task, n, epochs, pair_data, aux_size), recs in sorted(by_task.items(), key=lambda kv: TASK_ROWS.get(kv[0][0], kv[0][0])):
        ks = sorted({int(r["condition"]["k"]) for r in recs})
        seeds = sorted({r["experiment_seed"] for r in recs})
        cells: dict[tuple[int, str], list[dict]] = {}
        for r in sorted(recs, key=lambda r: r["experiment_seed"]):
            c = r["condition"]
            for m, v in c["methods"].items():
                cells.setdefault((int(c["k"]), m), []).append(v)
            for net, acc in c["pair_accuracy"].items():
                cells.setdefault((int(c["k"]), "pairs:" + net), []).append(acc)
        paper = {k: pv.lookup("xie2021", "Table 1", TASK_ROWS.get(task, task), table1_column(k)) for k in ks}
        rows = [["paper (Table 1)", "", *[_pct(paper[k].value) if paper[k] is not None else "-" for k in ks]]]
        found = []
        for scorer in PM_SCORERS:
            for rule in PM_RULES:
                m = f"{rule}/{scorer}"
                vs = {k: cells.get((k, m), []) for k in ks}
                row = [PM_RULES[rule], PM_SCORERS[scorer]]
                for k in ks:
                    succ = [v["success"] for v in vs[k]]
                    d = pv.compare_cells(statistics.mean(succ), paper[k])[2] if succ else "-"
                    row.append(f"{_spread(succ)} ({d})" if succ and paper[k] is not None else _spread(succ))
                rows.append(row)
                found.append([PM_RULES[rule], PM_SCORERS[scorer],
                              *[f"{_spread([float(v['originals_found']) for v in vs[k]], 0, each=False)} / "
                                f"{_spread([v['purity'] for v in vs[k]], 2, each=False)}" for k in ks]])
        where = (f"a sample of the dataset holding the private examples among {aux_size:,} others (the paper's threat "
                 "model)" if pair_data == "private-distribution"
                 else f"a disjoint auxiliary set of {aux_size:,} examples of the same distribution")
        head = ["clustering", "pair scores", *[f"k = {k}" for k in ks]]
        parts.append((f"**{task}**: {n} private examples x {epochs} encodings each (Table 1: x 50), m = 1; the "
                      f"attacker's training pairs from {where}; experiment seed{'s' if len(seeds) > 1 else ''} "
                      f"{', '.join(map(str, seeds))}"
                      + (" (mean ± sample sd over the seeds, each seed in brackets; diff to the paper in parentheses)"
                         if len(seeds) > 1 else "") + ". Lenient success, % of the originals:", head, rows))
        parts.append(("Originals with a group / mean group purity:", head, found))
        for k in ks:
            for net in ("mlp", "factorised"):
                accs = cells.get((k, "pairs:" + net), [])
                if not accs:
                    continue
                held = [100 * a["heldout_balanced"] for a in accs]
                p, _, d = pv.compare_cells(statistics.mean(held), paper_pair)
                rel = [a["release"] for a in accs]
                pair_rows.append([task, k, PM_SCORERS[net], p, _spread(held, each=False), d,
                                  _spread([100 * a["natural_accuracy"] for a in rel], each=False),
                                  _spread([100 * a["balanced_accuracy"] for a in rel], each=False),
                                  _spread([100 * a["true_positive_rate"] for a in rel], each=False),
                                  _spread([100 * a["true_negative_rate"] for a in rel], each=False),
                                  _spread([100 * a["sharing_pairs"] for a in rel], each=False)])
    if pair_rows:
        parts.append(("**Pair networks** (share an original?): held out = balanced pairs of a fresh release the "
                      "attacker simulates itself; release = every pair of the attacked release (its natural mix), "
                      "and the balanced accuracy, true-positive and true-negative rates there. Paper: section 4.2 "
                      "(94 %, evaluation pairs not described).",
                      ["task", "k", "network", "paper %", "held-out balanced %", "diff", "release natural %",
                       "release balanced %", "TPR %", "TNR %", "sharing pairs %"], pair_rows))
    return parts


@section("attack_reconstruction_paper_method", "Attacks: Xie & Hong 2021's own method, run fairly", order=41,
         kinds=("attack",), where=_attack("reconstruct-paper-method"))
def attack_reconstruction_paper_method(runs: list[dict]) -> Content:
    return [(either(Para(text.replace("**", "")), Para(text)), Table(head, rows))
            for text, head, rows in _paper_method_blocks(runs)]


def _scale_setting(r: dict) -> str:
    """The attack's setting in one label: the pairs it scores and its nmf repair passes."""
    graph = f"k-NN graph {r['graph_neighbours']}" if r.get("graph_neighbours") else "all pairs"
    rounds, iters = r.get("nmf_repair_rounds", 1), r.get("nmf_repair_iters")
    return graph + ("" if iters is None else f", repair {rounds} x {iters}")


SCALE_NOTE = ("Success against the number of private examples n (50 encodings each). Pairs: all pairs, or a k-NN graph "
              "of the abs() features (FAISS), with clustering and solving on the sparse graph. Repair: the passes of "
              "nmf's duplicate-group repair x their iterations. Release: private-sample seed / defender seed "
              "(experiment-only seeds; '-': the record does not state them, and the recipe reads it as 0 / 1). "
              "Claimed: originals that some group stands for, an upper bound on every success metric (blank: not "
              "recorded). Seconds: wall time of the whole attack on the stated threads (it depends on the machine and "
              "its load); peak GiB: the attack process's peak resident memory.")


def _scale_runs(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r.get("task", ""), r["n_private"]))


def _scale_release(r: dict) -> str:
    return f"{r['sample_seed']} / {r['defender_seed']}" if "sample_seed" in r else "-"


def _scale_where(runs: list[dict]) -> str:
    """What every release of a task shares: the scheme's (m, k) and the examples the sets are drawn from."""
    out = []
    for task in sorted({r.get("task", "") for r in runs}):
        rs = [r for r in runs if r.get("task", "") == task]
        mks = sorted({f"({r.get('m')}, {r.get('k')})" for r in rs})
        limits = sorted({r.get("train_limit") for r in rs}, key=str)
        src = (f"the first {limits[0]} training examples" if len(limits) == 1 and limits[0] else "the training split")
        out.append(f"{task}: TextHide {', '.join(mks)}; private, auxiliary and distractor examples and the sentence "
                   f"corpus drawn from {src}")
    return "; ".join(out) + "."


def _scale_docs(runs: list[dict]) -> Content:
    """The docs' form: where a setting has several releases, their mean ± sample sd first; then every release."""
    groups: dict[tuple, list[tuple[dict, str, dict]]] = {}
    rows = []
    for r in runs:
        for m, s in r["success"].items():
            claimed = (r.get("claimed") or {}).get(m)
            rows.append([r.get("task"), r["n_private"], r["n_encodings"], _scale_setting(r), _scale_release(r), m,
                         _pct(s.get("success_lenient")), _pct(s.get("success_strict")), _pct(s.get("success_sentence")),
                         "" if claimed is None else _pct(claimed), f"{r['attack_total_seconds']:.0f}",
                         r.get("threads", 1), r["peak_rss_gib"]])
            groups.setdefault((r.get("task"), r["n_private"], _scale_setting(r), m), []).append((r, m, s))
    parts: list = [Para(SCALE_NOTE + " " + _scale_where(runs))]
    if any(len(g) > 1 for g in groups.values()):
        summary = []
        for (task, n, setting, m), g in groups.items():
            claimed = [(r.get("claimed") or {}).get(m) for r, _, _ in g]
            summary.append([task, n, setting, m, len(g),
                            *[_spread([s.get(f"success_{w}") for _, _, s in g], each=False)
                              for w in ("lenient", "strict", "sentence")],
                            "" if None in claimed else _spread(claimed, each=False)])
        parts += [Para("Over releases (mean ± sample sd where a setting has several; each release in the table below):"),
                  Table(["task", "n", "setting", "method", "releases", "lenient %", "strict %", "sentence %",
                         "claimed %"], summary),
                  Para("Every release:")]
    return [*parts, Table(SCALE_HEAD, rows)]


SCALE_HEAD = ["task", "n", "encodings", "setting", "release", "method", "lenient %", "strict %", "sentence %",
              "claimed %", "seconds", "threads", "peak GiB"]


def _scale_plot(curves: dict[tuple[str, str, str], dict[int, list[float]]]):
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
    return fig


@section("attack_reconstruction_scaling", "Attacks: reconstruction at the size of a real release", order=42,
         kinds=("attack",), where=_attack("reconstruct-scale"))
def attack_reconstruction_scaling(records: list[dict]) -> Content:
    runs = _scale_runs(records)
    rows = []
    curves: dict[tuple[str, str, str], dict[int, list[float]]] = {}
    for r in runs:
        release = _scale_release(r)
        setting = _scale_setting(r)
        for m, s in r["success"].items():
            rows.append([r.get("task"), r["n_private"], r["n_encodings"], setting, release, m,
                         s.get("success_lenient"), s.get("success_strict"), s.get("success_sentence"),
                         (r.get("claimed") or {}).get(m), r["attack_total_seconds"], r.get("threads", 1), r["peak_rss_gib"]])
            if s.get("success_lenient") is not None:
                curves.setdefault((r.get("task", ""), setting, m), {}).setdefault(r["n_private"], []).append(
                    s["success_lenient"])
    page = [Para(f"{SCALE_NOTE} {_scale_where(runs)} The curve is lenient success, the mean over releases where a "
                 "setting has several (bars: minimum to maximum)."),
            Table(SCALE_HEAD, rows), Figure(partial(_scale_plot, curves), "reconstruction_scaling", "success vs n")]
    return either(page, _scale_docs(runs))


@section("attack_payload", "Attacks on a user's own encoding file", order=43, kinds=("attack",),
         where=lambda r: r.get("mode") == "payload")
def attack_payload(runs: list[dict]) -> Content:
    rows = []
    for r in runs:
        meta = r.get("payload_meta", {})
        if r["attack"] == "search":
            rows.append([display_name(r["payload"]), "search", meta.get("m"), meta.get("k"), r["n_encodings"], "-", r.get("mean_cosine")])
        else:
            for m, v in r.get("methods", {}).items():
                rows.append([display_name(r["payload"]), f"reconstruct ({m})", meta.get("m"), meta.get("k"), r["n_encodings"], v["groups"], v["mean_cosine"]])
    return [Para("No key is read, so there is no success rate: the mean cosine between each answer (an encoding, or a "
                 "recovered original) and its nearest candidate sentence's representation. High values mean the "
                 "encodings map back to specific sentences; the per-item answers are in the results JSON."),
            Table(["file", "attack", "m", "k", "encodings", "recovered originals", "mean cosine"], rows)]
