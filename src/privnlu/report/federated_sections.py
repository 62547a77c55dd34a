"""Report sections for federated TextHide and the gradient-matching attack (paper Table 2)."""

from __future__ import annotations

from functools import partial

from ..schemas import display_name
from .content import Content, Figure, Para, Table, code_text, either, html_only
from .markup import Markup
from .registry import section


def _rounds_plot(runs: list[dict]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for r in runs:
        pts = [(h["round"], h["eval"][next(iter(h["eval"]))]["score"]) for h in r["history"] if "eval" in h]
        if pts:
            ax.plot(*zip(*pts), label=r["label"])
    ax.set_xlabel("round")
    ax.set_ylabel("dev score")
    ax.set_title("global model after each round")
    ax.legend(fontsize=7)
    return fig


@section("federated", "Federated TextHide on Flower (Algorithm 2)", order=40, kinds=("federated", "train"))
def federated(records: list[dict]) -> Content | None:
    """Each federated run beside the centralized run of the same (m, k) and head input."""
    runs = [r for r in records if r["kind"] == "federated"]
    if not runs:
        return None

    def key(r: dict, abs_input: bool) -> tuple:
        return r["task"], str(r["m"]), int(r["k"]), bool(abs_input)

    central = {key(r, r.get("spec", {}).get("train", {}).get("abs_input", False)): r
               for r in records if r["kind"] == "train"}
    rows = []
    for r in runs:
        abs_in = bool(r.get("config", {}).get("abs_input", False))
        c = central.get(key(r, abs_in))
        dp = r.get("dp")
        rows.append([r["label"], r["algorithm"], r["mode"], r["clients"], r["rounds"], f"({r['m']}, {r['k']})",
                     "|x|" if abs_in else "x", f"({dp['epsilon']:.3g}, {dp['delta']:g})" if dp else None,
                     r["score"], r["best_score"], c["score"] if c else None, r["seconds"]])
    return [Table(["run", "algorithm", "mode", "clients", "rounds", "(m, k)", "head input", "client-level DP",
                   "final score", "best round", "centralized (same m, k, head input)", "seconds"], rows),
            Figure(partial(_rounds_plot, runs), "federated_rounds", "dev score of the global model per federated round")]


def _rate(v: list[bool]) -> float | None:
    return sum(v) / len(v) if v else None


GM_HEADERS = ["victim", "d", "k", "attacks", "paper", "ours", "ours - paper", "mask matched", "success if matched",
              "success if not matched", "x' = input mixture", "closed form x / encoding", "median s"]


def _gm_rows(records: list[dict]) -> dict[str, list[dict]]:
    rows_by_victim: dict[str, list[dict]] = {}
    for s in records:
        if s.get("source") == "sweep":
            for row in s["rows"]:
                rows_by_victim.setdefault(row.get("victim", s.get("victim", "input")), []).append(row)
    return rows_by_victim


def _gm_table(victim: str, rows: list[dict]) -> list[list[object]]:
    """One Table 2 row per (d, k): paper / ours / difference, and the mask-match breakdown (Figure 3's claim)."""
    import statistics

    from ..paper_values import compare_cells
    from ..paper_values.huang2020_gradient import cell as paper_cell

    cells: dict[tuple[int, int], list[dict]] = {}
    for row in rows:
        cells.setdefault((int(row["d"]), int(row["k"])), []).append(row)
    out = []
    for (d, k), rs in sorted(cells.items()):
        ok = _rate([bool(r["success"]) for r in rs])
        matched = _rate([bool(r["mask_matched"]) for r in rs if "mask_matched" in r])
        ok_if = _rate([bool(r["success"]) for r in rs if r.get("mask_matched")])
        ok_ifnot = _rate([bool(r["success"]) for r in rs if "mask_matched" in r and not r["mask_matched"]])
        mixture = _rate([float(r["mixture_mse"]) <= 1e-3 for r in rs if "mixture_mse" in r])  # "inf" read back
        closed = _rate([bool(r["analytic_success"]) for r in rs if "analytic_success" in r])
        enc = _rate([bool(r["encoding_recovered"]) for r in rs if "encoding_recovered" in r])
        fmt = lambda v: "" if v is None else f"{v:.2f}"  # noqa: E731
        out.append([victim, d, "baseline" if k == 0 else k, len(rs), *compare_cells(ok, paper_cell(d, k), digits=2),
                    fmt(matched), fmt(ok_if), fmt(ok_ifnot), fmt(mixture), fmt(closed if victim == "hidden" else enc),
                    f"{statistics.median(r['seconds'] for r in rs):.1f}"])
    return out


def _figure3(records: list[dict]) -> list[dict]:
    """The attacks a ``huang2020-figure3`` record chose (one successful, one failed, with their curves)."""
    return [row for s in records if s.get("source") == "figure3" for row in s["rows"]]


def _curve_tables(rows: list[dict]) -> list:
    """Figure 3 as tables: each chosen attack's losses at about ten of its recorded steps."""
    out: list = []
    for r in rows:
        curve = r["curve"]
        step = max(1, len(curve) // 10)
        pts = curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else [])
        out += [Para(f"{r.get('victim', 'hidden')} victim, {r.get('outcome', '')} attack: d = {r['d']}, k = {r['k']}, "
                     f"final MSE(x', x) {float(r['mse']):.3g}"),
                Table(["L-BFGS iterations", "gradient distance", "MSE(x', x)", "MSE(s', sigma)"],
                      [[p[0], *(f"{float(v):.3g}" if v is not None else "" for v in p[1:4])] for p in pts])]
    return out


GM_NOTE = ("Success: MSE between the recovered and the true input <= 0.001 (the paper's criterion; for k >= 2 against "
           "any of the mixed inputs); k = baseline: no TextHide. Batch size 1, m = 1 (one mask), the label given to the "
           "attacker, L-BFGS (lr 1, history 100, 20 iterations a step) for up to 1,200 iterations, dummy input and "
           "relaxed mask drawn from N(0, 1), a freshly initialised model per attack. Victims: *hidden* = an SST-2 MiniLM "
           "representation (rescaled to the CIFAR pixel variance) -> Linear(384, 256) + sigmoid -> Linear(256, d) + "
           "sigmoid, the hidden layer of width d mixed and masked -> Linear(d, 2); *input* = the mask on the attacked "
           "variable itself. 'mask matched': MSE between the relaxed and the true mask <= 0.001; 'x' = input mixture': "
           "(k >= 2) x' within MSE 0.001 of the same mixture of the inputs; 'closed form x' (hidden victim): "
           "x = (dL/dW1)[i] / (dL/db1)[i] from the first layer's gradient, a diagnostic, not the attack; 'encoding' "
           "(input victim): s' o x' recovers the encoding. 'median s': median seconds per attack.")
GM_PAPER = ("Paper (Table 2): LeNet-5 on CIFAR-10 with its last layer replaced by an MLP whose hidden layer (width d) is "
            "mixed and masked, 50 attacks per cell, one baseline (0.82) for all d.")


GM_PAGE_NOTE = Markup(
    "Success = MSE between the recovered and the true input &lt;= 0.001 (the paper's criterion; with "
    "k &gt;= 2 against any of the mixed inputs). Paper: LeNet-5 on CIFAR-10, mask at the MLP's hidden layer "
    "of width d; one baseline for all d. <b>hidden</b> victim: MiniLM representation (rescaled to the "
    "CIFAR pixel variance) -> sigmoid layer -> hidden layer of width d, masked -> head (the paper's "
    "architecture, text input). <b>input</b> victim (<code>--victim input</code>): the mask on the attacked "
    "variable itself. 'mask matched': MSE between the relaxed and the true mask &lt;= 0.001. "
    "'x' = input mixture': k &gt;= 2, x' within MSE 0.001 of the same mixture of the inputs. "
    "'closed form x' (hidden): x = (dL/dW1)[i] / (dL/db1)[i] from the first layer's gradient; "
    "'encoding' (input): s' o x' recovers the shared encoding.")


@section("gradient_attack", "Gradient-matching attack on TextHide (paper Table 2, Figure 3)", order=45,
         kinds=("gradient_attack",))
def gradient_attack(records: list[dict]) -> Content | None:
    """Table 2 per victim beside the paper, heat maps of success and mask match, Figure 3's loss curves."""
    by, fig3 = _gm_rows(records), _figure3(records)
    if not by and not fig3:
        return None
    table2 = Table(GM_HEADERS, [r for v, rows in sorted(by.items()) for r in _gm_table(v, rows)])
    page: list = []
    if by:
        page += [Para(GM_PAGE_NOTE), table2]
        for victim, rows in sorted(by.items()):
            cells: dict[tuple[int, int], list[dict]] = {}
            for row in rows:
                cells.setdefault((int(row["d"]), int(row["k"])), []).append(row)
            page += [_heatmap(cells, victim), _curves(rows, victim)]
    else:
        page.append(_curves(fig3, fig3[0].get("victim", "hidden")))
    docs: list = [table2, Para(GM_NOTE), Para(GM_PAPER)] if by else []
    if fig3:
        docs += [Para("Figure 3: the losses of the first successful and the first failed attack at k = 1 (by d, then "
                      "round) of the Table 2 records, after every 20th L-BFGS iteration or so."), *_curve_tables(fig3)]
    return either(page, docs)


def _heatmap_plot(cells: dict[tuple[int, int], list[dict]]):
    import matplotlib.pyplot as plt
    import numpy as np

    dims = sorted({d for d, _ in cells})
    ks = sorted({k for _, k in cells})
    names = ["baseline" if k == 0 else f"k={k}" for k in ks]
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.2))
    for ax, key, title in ((axes[0], "success", "x recovered (MSE <= 0.001)"), (axes[1], "mask_matched", "mask matched")):
        rate = {c: _rate([bool(r[key]) for r in rs if key in r]) for c, rs in cells.items()}
        grid = np.array([[np.nan if rate.get((d, k)) is None else rate[(d, k)] for k in ks] for d in dims], dtype=float)
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i in range(len(dims)):
            for j in range(len(ks)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", color="w" if grid[i, j] < 0.5 else "k",
                            fontsize=8)
        ax.set_xticks(range(len(ks)), names)
        ax.set_yticks(range(len(dims)), [str(d) for d in dims])
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("d (masked layer width)")
    fig.colorbar(im, ax=list(axes))
    return fig


def _heatmap(cells: dict[tuple[int, int], list[dict]], victim: str) -> Figure:
    return Figure(partial(_heatmap_plot, cells), "gradient_attack_heatmap" + ("" if victim == "hidden" else f"_{victim}"),
                  f"{victim} victim: attack success (left, the paper's criterion) and mask matched (right) over d and k")


def _curves_plot(good: dict | None, bad: dict | None):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), squeeze=False)
    for ax, r, title in ((axes[0][0], good, "(a) successful attack"), (axes[0][1], bad, "(b) failed attack")):
        if r is None:
            ax.set_visible(False)
            continue
        it = [p[0] for p in r["curve"]]
        for j, label in ((1, "gradient distance"), (2, "MSE(x', x)"), (3, "MSE(s', sigma)")):
            ys = [p[j] for p in r["curve"]]
            if any(v is not None for v in ys):
                ax.plot(it, [max(v, 1e-20) if v is not None else float("nan") for v in ys], label=label)
        ax.set_yscale("log")
        ax.set_xlabel("L-BFGS iterations")
        ax.set_title(f"{title}: d={r['d']}, k=1", fontsize=9)
        ax.legend(fontsize=7)
    return fig


def _curves(rows: list[dict], victim: str) -> Figure | None:
    """Figure 3: gradient distance, input MSE and mask MSE over iterations, one successful and one failed attack."""
    masked = [r for r in rows if int(r["k"]) == 1 and r.get("curve")]
    good = next((r for r in masked if r["success"]), None)
    bad = next((r for r in masked if not r["success"] and r["curve"] and all(
        v == v and abs(v) != float("inf") for p in r["curve"] for v in p[1:3])), None) or next(
        (r for r in masked if not r["success"]), None)
    if good is None and bad is None:
        return None
    return Figure(partial(_curves_plot, good, bad),
                  "gradient_attack_curves" if victim == "hidden" else f"gradient_attack_curves_{victim}",
                  f"{victim} victim, paper Figure 3: losses over iterations of a successful and a failed attack")


LEAK_HEAD = ["batch size", "scheme", "messages", "token precision", "token recall", "exact sentences", "token accuracy",
             "span test (first message): ids selected / precision / recall", "span test: precision of the best-ranked ids, as many as the true ones"]


def _scheme_name(r: dict) -> str:
    """``none``, or TextHide with the (m, k) the client used (k = 1 is still TextHide: a secret mask)."""
    return "none" if r.get("scheme", "texthide" if int(r["k"]) > 1 else "none") == "none" else f"TextHide ({r['m']}, {r['k']})"


def _leak_rows(sweeps: list[dict]) -> list[list[object]]:
    rows = []
    for s in sweeps:
        for r in s["results"]:
            sp = r.get("span") or {}
            span = (f"{sp['selected']:.0f} / {sp['precision']:.2f} / {sp['recall']:.2f}" if sp else "-")
            rows.append([r["batch_size"], _scheme_name(r), r["trials"], r["precision"], r["recall"], r["exact_sentences"],
                         r["token_accuracy"], span, sp.get("precision_at_true_count", "-")])
    return rows


def _leak_examples(sweeps: list[dict]) -> list[list[object]]:
    return [[r["batch_size"], _scheme_name(r), row["round"], ex["true"].strip(), ex["recovered"].strip()]
            for s in sweeps for r in s["results"] for row in r.get("rows", []) for ex in row.get("examples") or []]


LEAK_NOTE = ("Each message is the reply the federated client code sends for client 0 in rounds 1, 2, ... of a seeded "
             "2-client joint-mode run with the embedding tables trained (`--train-embeddings`), at the initial model; the "
             "attacker gets the message and the model the server sent, the auditor replays the client's batch from the "
             "seed. Token precision / recall: the non-zero rows of the word table's gradient against the batch's token "
             "ids. Exact sentences: share of the batch's sentences recovered token for token; token accuracy: share of "
             "positions right. Span test: the first attention layer's weight gradients (sent with the default frozen "
             "tables too) against each vocabulary id's first-layer input; a fixed threshold (relative residual < 0.5) "
             "selects ids, and the last column ranks them and keeps as many as the batch has (a count the attacker "
             "does not know).")


@section("embedding_leak", "Embedding-gradient leak of federated joint mode", order=46,
         kinds=("gradient_attack", "embedding_leak_sweep"))
def embedding_leak(records: list[dict]) -> Content | None:
    """Per captured message: the token set read off the embedding gradient, its precision/recall against the
    client's true batch, and example recovered word sets beside the true sentences; plus the ordering sweep."""
    wires = [r for r in records if r["kind"] == "gradient_attack" and r.get("source") == "wire" and r.get("token_leak")]
    sweeps = [r for r in records if r["kind"] == "embedding_leak_sweep"]
    if not wires and not sweeps:
        return None
    rows = []
    for w in wires:
        for t in w["token_leak"]:
            if not t.get("embedding_gradient"):
                rows.append([display_name(w["wire"]), t["round"], t["node_id"], "none (tables frozen)", None, None, "", ""])
                continue
            words = [x for x in t["tokens"] if not x.startswith("[")]
            rows.append([display_name(w["wire"]), t["round"], t["node_id"], len(t["token_ids"]), t.get("precision"), t.get("recall"),
                         " ".join(words[:25]) + (" ..." if len(words) > 25 else ""),
                         " | ".join(t.get("true_sentences", []))])
    out: list = [html_only(Table(["capture", "round", "node", "token ids recovered", "precision", "recall",
                                  "recovered word set (first 25)", "true sentences (examples)"], rows) if rows else None)]
    if sweeps:
        def argv(s: dict) -> str:  # the record's settings, without where the run wrote its file
            a = s.get("argv", [])
            return " ".join(f"{k} {v}" for k, v in zip(a[::2], a[1::2]) if k != "--out")

        settings = sorted({f"{s.get('task', '?')}, {argv(s)}" for s in sweeps})
        ex = _leak_examples(sweeps)
        examples = Table(["batch size", "scheme", "round", "true sentence", "recovered"], ex) if ex else None
        out += [Table(LEAK_HEAD, _leak_rows(sweeps)),
                either([Para(LEAK_NOTE.replace("`", "")), examples],
                       [Para("Settings: " + "; ".join(f"`{x}`" for x in settings) + ". " + LEAK_NOTE),
                        Para("Recovered sentences (the messages that carry an example):") if ex else None, examples])]
    return out


# -- whole sentences by the DAGER-class span inversion ---------------------------------------------------------

SENTENCE_HEAD = ["batch size", "scheme", "client dropout", "local noise z", "messages", "tokens per update (mean)",
                 "d", "span saturated", "ROUGE-1", "ROUGE-2", "exact sentences", "certified / recovered",
                 "seconds per message"]
SENTENCE_NOTE = ("Each message is the FedSGD reply privnlu's client code sends for client 0 in rounds 1, 2, ... of a "
                 "seeded 2-client joint-mode run with the default frozen embedding tables, at the initial model; the "
                 "attacker gets the message and the model the server sent (threat model `wire-span-inversion`), the "
                 "auditor replays the batch from the seed. ROUGE-1/2: F1 of clipped unigram/bigram overlap over "
                 "token ids, [CLS]/[SEP] dropped, recovered sentences matched one-to-one to the true ones (Hungarian "
                 "on ROUGE-1), a missing sentence scoring 0; exact: the matched sentence is the true one token for "
                 "token. Certified: every layer-2 input of the sentence lies in the second layer's gradient span. "
                 "Client dropout off: the client encoder's dropout set to 0 for the measurement (exact inversion "
                 "assumes it); on: BERT's 0.1, as privnlu's client trains. Local noise: the message clipped to "
                 "C = 1 and noised with N(0, (zC)^2) per coordinate, as `--local-clip 1 --local-noise z`. "
                 "Span saturated: the first layer's gradient has full rank (at least as many token slots as d).")


def _sentence_rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for rec in sorted(recs, key=lambda r: (r["settings"]["dropout"] != "off", r["settings"]["noise"] > 0,
                                           r["settings"]["batch_size"])):
        for r in rec["results"]:
            rec_n = sum(x["recovered"] for x in r["rows"])
            cert = sum(x["certified"] for x in r["rows"])
            rows.append([r["batch_size"], _scheme_name(r), r["dropout"], f"{r['noise']:g}" if r["noise"] else "-",
                         r["trials"], f"{r['tokens']:.0f}", r["dim"], f"{r['saturated']} / {r['trials']}",
                         r["rouge1"], r["rouge2"], r["exact"], f"{cert} / {rec_n}", f"{r['seconds']:.0f}"])
    return rows


def _sentence_paper(recs: list[dict]) -> list[list[object]]:
    cells: dict[str, dict[str, float]] = {}
    for rec in recs:
        for v in rec.get("paper", []):
            cells.setdefault(v["row"], {})[v["column"]] = v["value"]
    return [[row, f"{c.get('ROUGE-1', float('nan')):g}", f"{c.get('ROUGE-2', float('nan')):g}"]
            for row, c in sorted(cells.items())]


def _sentence_examples(recs: list[dict]) -> list[list[object]]:
    out = []
    for rec in sorted(recs, key=lambda r: r["settings"]["batch_size"]):
        if rec["settings"]["dropout"] != "off" or rec["settings"]["noise"] or rec["settings"]["batch_size"] != 1:
            continue  # with one sentence per message the first recovery is that sentence's
        for r in rec["results"]:
            ex = next((x["examples"] for x in r["rows"] if x.get("examples")), None)
            if ex and r["scheme"] == "none":
                out.append([r["batch_size"], ex["true"][0].strip() if ex["true"] else "",
                            ex["recovered"][0].strip() if ex["recovered"] else "(none)"])
    return out


@section("sentence_recovery", "Sentences recovered from federated client messages (DAGER-class span inversion)",
         order=47, kinds=("sentence_recovery",), where=lambda r: "results" in r)
def sentence_recovery(recs: list[dict]) -> Content:
    """The span inversion per batch size, scheme and protection; DAGER's published numbers beside."""
    s = recs[0]["settings"]
    paper = _sentence_paper(recs)
    paper_table = Table(["batch size", "ROUGE-1 (%)", "ROUGE-2 (%)"], paper)
    ex = _sentence_examples(recs)
    examples = Table(["batch size", "true sentence", "recovered sentence"], ex) if ex else None
    return [Table(SENTENCE_HEAD, _sentence_rows(recs)),
            either([Para(SENTENCE_NOTE.replace("`", "")),
                    (Para("DAGER's published numbers (Petrov et al. 2024, BERT-base, SST-2; not privnlu's):"),
                     paper_table) if paper else None, examples],
                   [Para(f"Settings: `{s['task']}`, train limit {s['train_limit']}, seed {s['seed']}, at most "
                         f"{s['max_seconds']:g} s of sentence search per message. " + SENTENCE_NOTE),
                    (Para("DAGER's published numbers (Petrov et al. 2024, BERT-base, d = 768, SST-2; their model and "
                          "implementation, not privnlu's):"), paper_table) if paper else None,
                    (Para("Batch size 1, no TextHide, the first message:"), examples) if ex else None])]


# -- the span inversion on what a SecAgg+ server sees --------------------------------------------------------

AGGREGATE_HEAD = ["clients", "batch size per client", "sentences per round", "tokens per round (mean)", "d",
                  "what the server sees", "span saturated", "ROUGE-1", "ROUGE-2", "exact sentences"]
AGGREGATE_NOTE = ("Each round's N clients (seeded joint-mode run, frozen embedding tables, no TextHide) compute the "
                  "FedSGD reply privnlu's client code sends at the initial model; the attacker gets their example-"
                  "weighted mean and the sent model and targets the union of the N batches; the auditor scores "
                  "against all of them (ROUGE and exact as above). Plain message: N = 1 (SecAgg+ needs 2 clients). "
                  "Exact sum: the mean with no quantization error (the attacker's best case). SecAgg+ decoded: the "
                  "mean as Flower's SecAgg+ gives it to the server (each client's coordinates clipped to [-8, 8] and "
                  "stochastically rounded to 2^24 levels before the masked sum); the attacker knows the protocol adds "
                  "this error and reads each span's rank above the noise bulk of its spectrum (above 2.5 times the "
                  "median singular value), so such a span is never reported saturated. Client encoder dropout off "
                  "(exact inversion assumes none: the attacker's best case). Span saturated: the first layer's "
                  "gradient has full rank (more token slots than d).")


def _aggregate_rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for rec in sorted(recs, key=lambda r: (r["settings"]["batch_size"], r["settings"]["clients"])):
        s = rec["settings"]
        for r in rec["results"]:
            seen = ("SecAgg+ decoded" if r["quantized"] else "exact sum") if s["clients"] > 1 else "plain message"
            rows.append([s["clients"], s["batch_size"], s["clients"] * s["batch_size"], f"{r['tokens']:.0f}", r["dim"],
                         seen, f"{r['saturated']} / {r['trials']}", r["rouge1"], r["rouge2"], r["exact"]])
    return rows


def _aggregate_settings(recs: list[dict]) -> str:
    s = recs[0]["settings"]
    return (f"Settings: `{s['task']}`, packaged encoder, max length {s['max_length']}, {s['trials']} rounds per cell, "
            f"train limit {s['train_limit']}, seed {s['seed']}, at most {s['max_seconds']:g} s of sentence search per "
            "aggregate. ")


@section("sentence_recovery_secagg", "Sentences recovered from what a SecAgg+ server sees (DAGER-class span "
         "inversion on the aggregate)", order=47, kinds=("sentence_recovery_secagg",))
def sentence_recovery_secagg(recs: list[dict]) -> Content:
    """The span inversion on the aggregate of N clients, exact and as SecAgg+ decodes it."""
    return [Table(AGGREGATE_HEAD, _aggregate_rows(recs)), code_text(_aggregate_settings(recs) + AGGREGATE_NOTE)]


# -- client-side DP-SGD (sample-level DP of every client message) ----------------------------------------------

CLIENT_DP_HEAD = ["run", "target epsilon", "accounted epsilon (worst client)", "delta (worst client)",
                  "noise multiplier", "final dev score", "best evaluated round", "non-private final score",
                  "final score - non-private"]


def _client_dp_rows(recs: list[dict]) -> list[list[object]]:
    base = next((r for r in recs if "client_dp" not in r), None)
    rows = []
    for r in sorted(recs, key=lambda r: r.get("client_dp", {}).get("target_epsilon", float("inf"))):
        c = r.get("client_dp")
        zs = [x["noise_multiplier"] for x in c["clients"]] if c else []
        rows.append([r["label"], c["target_epsilon"] if c else "- (no DP)", c["epsilon"] if c else None,
                     f"{c['delta']:.2g}" if c else None,
                     (f"{min(zs):.3g}" + (f" to {max(zs):.3g}" if max(zs) > min(zs) * (1 + 1e-3) else "")) if zs
                     else None, r["score"], r["best_score"], base["score"] if base else None,
                     r["score"] - base["score"] if base and c else None])
    return rows


def _client_dp_note(recs: list[dict]) -> str:
    s = recs[0]["settings"]
    return (f"Settings: `{s['task']}`, frozen mode (a head with hidden layer(s) {s['hidden']} on the packaged "
            f"encoder's representations), {s['clients']} clients, {s['rounds']} FedSGD rounds, batch "
            f"{s['batch_size']} per client (the Poisson sampling's expected batch), server Adam at lr {s['lr']:g}, "
            f"clipping norm {s['clip']:g}, seed {s['seed']}; every run at the same budget. Each client's messages are "
            "(epsilon, delta)-DP per example of its data over all rounds (client-side DP-SGD, Opacus PRV "
            "accountant, each client counted in every round); delta = 1/(10 n_c). Dev score of the server's global "
            "model, unmasked.")


@section("federated_client_dp", "Federated training with client-side DP-SGD: utility against epsilon", order=48,
         kinds=("federated_client_dp",))
def federated_client_dp(recs: list[dict]) -> Content:
    """Dev score of the global model at each target epsilon beside the non-private run at the same budget."""
    return [Table(CLIENT_DP_HEAD, _client_dp_rows(recs)), code_text(_client_dp_note(recs))]


# -- the span inversion against client-side DP-SGD messages --------------------------------------------------

CLIENT_DP_SPAN_HEAD = ["batch size (expected)", "client DP-SGD", "noise multiplier z", "accounted epsilon",
                       "messages", "empty samples", "sentences per message (mean)", "tokens per update (mean)", "d",
                       "span saturated", "ROUGE-1", "ROUGE-2", "exact sentences", "certified / recovered"]
CLIENT_DP_SPAN_NOTE = ("Each message is the FedSGD reply privnlu's client code sends for client 0 in rounds 1, 2, ... "
                       "of a seeded joint-mode run with the default frozen embedding tables and no TextHide, at the "
                       "initial model; the attacker gets the message, its declared (expected) batch size and the "
                       "model the server sent (threat model `wire-span-inversion`), the auditor replays the batch "
                       "the client used from the seed. Off: the non-private client (a fixed batch of B). Client "
                       "DP-SGD: a Poisson sample of the client's shard at rate q = B / n_c, each example's gradient "
                       "clipped to C, Gaussian noise of standard deviation zC on the sum, divided by qn_c; z "
                       "calibrated so that the client's messages over all the run's rounds are (epsilon, delta)-DP "
                       "per example (Opacus PRV accountant, every round counted). Clip only: the same sampling and "
                       "clipping with z = 0 (a diagnostic, no guarantee); it and the epsilon rows draw the "
                       "same Poisson samples (same seed), so they differ by the noise only. Empty samples: messages "
                       "whose Poisson sample held no example (nothing to recover); the means are over the others. "
                       "The sentence search stops at the declared batch size, so a sample larger than it is only "
                       "partly recovered. ROUGE, exact and certified as in the table of plain messages. Client "
                       "encoder dropout off (exact inversion assumes none: the attacker's best case). Span "
                       "saturated: the first layer's gradient has full rank.")


def _client_dp_span_order(rec: dict) -> tuple:
    s = rec["settings"]
    private = s["epsilon"] > 0 and s["noise_multiplier"] is None
    return (s["batch_size"], s["epsilon"] > 0, private, -s["epsilon"])


def _client_dp_span_rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for rec in sorted(recs, key=_client_dp_span_order):
        s, plan = rec["settings"], rec.get("plan")
        for r in rec["results"]:
            scored = [x for x in r["rows"] if x["sentences"]]
            label = ("off" if not s["epsilon"] else "clip only" if s["noise_multiplier"] is not None
                     else f"epsilon {s['epsilon']:g}")
            rows.append([s["batch_size"], label, f"{plan['noise_multiplier']:.3g}" if plan else "-",
                         plan["epsilon"] if plan and plan["epsilon"] is not None else "-", r["trials"],
                         r.get("empty", 0),
                         f"{sum(x['sentences'] for x in scored) / len(scored):.2g}" if scored else "-",
                         f"{r['tokens']:.0f}", r["dim"], f"{r['saturated']} / {r['trials']}", r["rouge1"],
                         r["rouge2"], r["exact"], f"{sum(x['certified'] for x in r['rows'])} / "
                                                  f"{sum(x['recovered'] for x in r['rows'])}"])
    return rows


def _client_dp_span_settings(recs: list[dict]) -> str:
    s = recs[0]["settings"]
    plans = [r["plan"] for r in recs if r.get("plan")]
    delta = f", delta = 1/(10 n_c) = {plans[0]['delta']:.2g}" if plans else ""
    return (f"Settings: `{s['task']}`, packaged encoder, {s['clients']} clients, train limit {s['train_limit']} "
            f"(n_c = {s['train_limit'] // s['clients']} examples per client), noise calibrated for a run of "
            f"{s['rounds']} rounds (one DP-SGD step per round){delta}, clipping norm C = {s['clip']:g}, "
            f"{s['trials']} messages per cell, seed {s['seed']}, at most {s['max_seconds']:g} s of sentence search "
            "per message. ")


@section("sentence_recovery_client_dp", "Sentences recovered from client-side DP-SGD messages (DAGER-class span "
         "inversion)", order=48, kinds=("sentence_recovery_client_dp",))
def sentence_recovery_client_dp(recs: list[dict]) -> Content:
    """The span inversion on a client's DP-SGD messages per epsilon, beside the non-private and clip-only client."""
    return [Table(CLIENT_DP_SPAN_HEAD, _client_dp_span_rows(recs)),
            code_text(_client_dp_span_settings(recs) + CLIENT_DP_SPAN_NOTE)]
