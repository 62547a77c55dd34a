"""Report sections for d_chi-privacy (Qu et al. 2021): inversion frontier, geometry, plausible deniability."""

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
    r = recs[-1]
    noise = table(["eta", "mean ||N||", "n / eta"], [[x["eta"], x["mean_norm"], x["n_over_eta"]] for x in r["noise"]])
    knn = table(["k", "mean k-th NN distance"], [[k, v] for k, v in r["knn"].items()])
    return f"<p>{r['dim']}-d table, k-NN over {r['knn_rows']} tokens.</p>" + noise + knn


@section("dchi_deniability", "d_chi: plausible deniability N_w and S_w (paper Figure 4)", order=42)
def dchi_deniability(records: list[dict], ctx: Context) -> str | None:
    recs = _dchi(records, "deniability")
    if not recs:
        return None
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for r in sorted(recs, key=lambda r: r["eta"]):
        axes[0].hist(r["n_w"], bins=40, histtype="step", label=f"eta={r['eta']:g}")
        axes[1].hist(r["s_w"], bins=40, histtype="step", label=f"eta={r['eta']:g}")
    axes[0].set_xlabel(f"N_w (of {recs[0]['draws']} draws)")
    axes[1].set_xlabel("S_w (distinct outputs)")
    axes[0].legend(fontsize=7)
    rows = [[r["eta"], r["words"], r["draws"], sum(r["n_w"]) / len(r["n_w"]), sum(r["s_w"]) / len(r["s_w"]), r["seconds"]] for r in recs]
    return ctx.figure(fig, "dchi_deniability", "histograms of N_w and S_w") + table(["eta", "words", "draws", "mean N_w", "mean S_w", "seconds"], rows)


@section("dchi_calibration", "d_chi: calibrated eta for this model", order=43)
def dchi_calibration(records: list[dict], ctx: Context) -> str | None:
    recs = _dchi(records, "calibration")
    if not recs:
        return None
    return table(["target accuracy", "eta", "accuracy at eta", "tokens", "dim"],
                 [[r["target_accuracy"], r["eta"], r["accuracy_at_eta"], r["tokens"], r["dim"]] for r in recs])
