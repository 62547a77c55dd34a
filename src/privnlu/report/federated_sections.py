"""Report sections for federated TextHide and the gradient-matching attack (paper Table 2)."""

from __future__ import annotations

from ..attacks.gradient_matching import PAPER_TABLE2
from .registry import Context, section, table


@section("federated", "Federated TextHide on Flower (Algorithm 2)", order=40)
def federated(records: list[dict], ctx: Context) -> str | None:
    runs = [r for r in records if r.get("kind") == "federated"]
    if not runs:
        return None
    def key(r: dict, abs_input: bool) -> tuple:
        return r["task"], str(r["m"]), int(r["k"]), bool(abs_input)

    central = {key(r, r.get("spec", {}).get("train", {}).get("abs_input", False)): r
               for r in records if r.get("kind") == "train"}
    rows = []
    for r in runs:
        abs_in = bool(r.get("config", {}).get("abs_input", False))
        c = central.get(key(r, abs_in))
        dp = r.get("dp")
        rows.append([r["label"], r["algorithm"], r["mode"], r["clients"], r["rounds"], f"({r['m']}, {r['k']})",
                     "|x|" if abs_in else "x", f"({dp['epsilon']:.3g}, {dp['delta']:g})" if dp else None,
                     r["score"], r["best_score"], c["score"] if c else None, r["seconds"]])
    html = table(["run", "algorithm", "mode", "clients", "rounds", "(m, k)", "head input", "client-level DP",
                  "final score", "best round", "centralized (same m, k, head input)", "seconds"], rows)
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
    return html + ctx.figure(fig, "federated_rounds", "dev score of the global model per federated round")


@section("gradient_attack", "Gradient-matching attack on TextHide (paper Table 2)", order=45)
def gradient_attack(records: list[dict], ctx: Context) -> str | None:
    sweeps = [r for r in records if r.get("kind") == "gradient_attack" and r.get("source") == "sweep"]
    if not sweeps:
        return None
    cells: dict[tuple[int, int], list[bool]] = {}
    enc_cells: dict[tuple[int, int], list[bool]] = {}
    for s in sweeps:
        for row in s["rows"]:
            cells.setdefault((int(row["d"]), int(row["k"])), []).append(bool(row["success"]))
            enc_cells.setdefault((int(row["d"]), int(row["k"])), []).append(bool(row.get("encoding_recovered",
                                                                                          row["success"])))
    dims = sorted({d for d, _ in cells})
    ks = sorted({k for _, k in cells})
    rate = {key: sum(v) / len(v) for key, v in cells.items()}
    enc_rate = {key: sum(v) / len(v) for key, v in enc_cells.items()}
    names = ["baseline" if k == 0 else f"k={k}" for k in ks]
    rows = []
    for d in dims:
        paper = [PAPER_TABLE2["baseline"] if k == 0 else PAPER_TABLE2["k=1"].get(d) if k == 1 else PAPER_TABLE2["k>=2"]
                 for k in ks]
        rows.append([f"d={d}"] + [rate.get((d, k)) for k in ks] + [min(len(cells.get((d, k), [])) for k in ks)] + paper)
    html = table(["d \\ k", *names, "attacks per cell", *[f"paper {n}" for n in names]], rows)
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.2))
    for ax, r, title in ((axes[0], rate, "success: x recovered (MSE <= 0.001)"),
                         (axes[1], enc_rate, "encoding s' o x' recovered")):
        grid = np.array([[r.get((d, k), np.nan) for k in ks] for d in dims])
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i in range(len(dims)):
            for j in range(len(ks)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", color="w" if grid[i, j] < 0.5 else "k",
                            fontsize=8)
        ax.set_xticks(range(len(ks)), names)
        ax.set_yticks(range(len(dims)), [str(d) for d in dims])
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("representation dimension d")
    fig.colorbar(im, ax=list(axes))
    return html + ctx.figure(fig, "gradient_attack_heatmap", "heatmaps over d and k of gradient-matching attack success "
                             "(left, the paper's criterion) and of recovering the TextHide encoding (right)")
