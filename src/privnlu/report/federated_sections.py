"""Report sections for federated TextHide and the gradient-matching attack (paper Table 2)."""

from __future__ import annotations

from ..attacks.gradient_matching import PAPER_TABLE2
from .registry import Context, section, table


@section("federated", "Federated TextHide on Flower (Algorithm 2)", order=40)
def federated(records: list[dict], ctx: Context) -> str | None:
    runs = [r for r in records if r.get("kind") == "federated"]
    if not runs:
        return None
    central = {(r["task"], str(r["m"]), int(r["k"])): r for r in records if r.get("kind") == "train"}
    rows = []
    for r in runs:
        c = central.get((r["task"], str(r["m"]), int(r["k"])))
        rows.append([r["label"], r["algorithm"], r["mode"], r["clients"], r["rounds"], f"({r['m']}, {r['k']})",
                     r["score"], r["best_score"], c["score"] if c else None, r["seconds"]])
    html = table(["run", "algorithm", "mode", "clients", "rounds", "(m, k)", "final score", "best round",
                  "centralized (same m, k)", "seconds"], rows)
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
    for s in sweeps:
        for row in s["rows"]:
            cells.setdefault((int(row["d"]), int(row["k"])), []).append(bool(row["success"]))
    dims = sorted({d for d, _ in cells})
    ks = sorted({k for _, k in cells})
    rate = {key: sum(v) / len(v) for key, v in cells.items()}
    names = ["baseline" if k == 0 else f"k={k}" for k in ks]
    rows = []
    for d in dims:
        paper = [PAPER_TABLE2["baseline"] if k == 0 else PAPER_TABLE2["k=1"].get(d) if k == 1 else PAPER_TABLE2["k>=2"]
                 for k in ks]
        rows.append([f"d={d}"] + [rate.get((d, k)) for k in ks] + [min(len(cells.get((d, k), [])) for k in ks)] + paper)
    html = table(["", *names, "attacks per cell", *[f"paper {n}" for n in names]], rows)
    import matplotlib.pyplot as plt
    import numpy as np

    grid = np.array([[rate.get((d, k), np.nan) for k in ks] for d in dims])
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i in range(len(dims)):
        for j in range(len(ks)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", color="w" if grid[i, j] < 0.5 else "k", fontsize=8)
    ax.set_xticks(range(len(ks)), names)
    ax.set_yticks(range(len(dims)), [str(d) for d in dims])
    ax.set_ylabel("representation dimension d")
    ax.set_title("attack success rate (MSE <= 0.001)")
    fig.colorbar(im, ax=ax)
    return html + ctx.figure(fig, "gradient_attack_heatmap", "heatmap of gradient-matching attack success over d and k")
