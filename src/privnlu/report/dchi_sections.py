"""Report sections for d_chi-privacy (Qu et al. 2021): inversion frontier, geometry, examples, plausible deniability."""

from __future__ import annotations

from .registry import Context, section, table


def _dchi(records: list[dict], analysis: str) -> list[dict]:
    return [r for r in records if r.get("kind") == "dchi" and r.get("analysis") == analysis]


@section("dchi_inversion", "d_chi: token inversion accuracy against eta (paper Table 3)", order=40)
def dchi_inversion(records: list[dict], ctx: Context) -> str | None:
    recs = _dchi(records, "inversion")
    if not recs:
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    rows = []
    for r in recs:
        etas = [x["eta"] for x in r["rows"]]
        ax.plot(etas, [x["accuracy"] for x in r["rows"]], "o-", label=f"{r['task']} ({r['dim']}-d, ours)")
        paper = [(x["eta"], x["paper"]) for x in r["rows"] if x.get("paper") is not None]
        if paper:
            ax.plot(*zip(*paper), "x--", label=f"{r['task']} (paper, bert-base 768-d)")
        rows += [[r["task"], r["dim"], x["eta"], f"{x['accuracy']:.4f}", "" if x.get("paper") is None else f"{x['paper']:.4f}"] for x in r["rows"]]
    ax.set_xlabel("eta")
    ax.set_ylabel("inversion accuracy")
    ax.legend(fontsize=7)
    ax.set_title("nearest-neighbour inversion of M_rep")
    return ctx.figure(fig, "dchi_inversion", "inversion accuracy against eta") + table(["task", "dim", "eta", "accuracy", "paper"], rows)


@section("dchi_geometry", "d_chi: noise norm and embedding-table geometry (paper Figure 3)", order=41)
def dchi_geometry(records: list[dict], ctx: Context) -> str | None:
    recs = _dchi(records, "geometry")
    if not recs:
        return None
    import matplotlib.pyplot as plt

    r = recs[-1]
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
    noise_t = table(["eta", "mean ||N||", "n / eta"], [[x["eta"], x["mean_norm"], x["n_over_eta"]] for x in noise])
    knn = table(["k", "mean k-th NN distance"], [[k, v] for k, v in r["knn"].items()])
    return (f"<p>{r['dim']}-d table, k-NN over {r['knn_rows']} regular tokens (k = |V|-1 is the farthest token).</p>"
            + ctx.figure(fig, "dchi_geometry", "noise norm against n/eta; k-NN distances") + noise_t + knn)


@section("dchi_examples", "d_chi: privatized examples (paper Tables 1-2)", order=42)
def dchi_examples(records: list[dict], ctx: Context) -> str | None:
    recs = _dchi(records, "examples")
    if not recs:
        return None
    html = ""
    for r in recs:
        html += table(["eta", "M_txt output"], [[x["eta"], x["text"]] for x in r["privatized"]])
        html += f"<p>Top outputs of each token over {r['draws']} draws at eta = {r['top_eta']:g}:</p>"
        html += table(["token", "outputs (count)"],
                      [[t["token"], ", ".join(f"{o} ({c})" for o, c in t["outputs"])] for t in r["top_outputs"]])
    return html


@section("dchi_deniability", "d_chi: plausible deniability N_w and S_w (paper Figure 4)", order=43)
def dchi_deniability(records: list[dict], ctx: Context) -> str | None:
    recs = sorted(_dchi(records, "deniability"), key=lambda r: r["eta"])
    if not recs:
        return None
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
    rows = [[r["eta"], r["words"], r["draws"], float(np.mean(r["n_w"])), float(np.median(r["n_w"])), float(np.mean(r["s_w"])),
             float(np.median(r["s_w"])), r.get("certified", ""), r["seconds"]] for r in recs]
    return ctx.figure(fig, "dchi_deniability", "N_w and S_w over the vocabulary") + table(
        ["eta", "words", "draws", "mean N_w", "median N_w", "mean S_w", "median S_w", "certified", "seconds"], rows)


@section("dchi_calibration", "d_chi: calibrated eta for this model", order=44)
def dchi_calibration(records: list[dict], ctx: Context) -> str | None:
    recs = _dchi(records, "calibration")
    if not recs:
        return None
    return table(["target accuracy", "eta", "accuracy at eta", "tokens", "dim"],
                 [[r["target_accuracy"], r["eta"], r["accuracy_at_eta"], r["tokens"], r["dim"]] for r in recs])
