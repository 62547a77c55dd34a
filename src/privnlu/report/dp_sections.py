"""Report section for DP instance encoding utility (Xie & Hong 2022, Figure 1): score against epsilon."""

from __future__ import annotations

from collections import defaultdict

from .registry import Context, md_table, section, table

Curve = dict[float, tuple[float, float]]  # target epsilon -> (score, accounted epsilon)


def _curves(records: list[dict]) -> dict[str, tuple[dict[str, float], dict[tuple[str, str], Curve]]]:
    """Per task: reference scores (baseline, TextHide) and one curve per (mechanism, calibration)."""
    out: dict[str, tuple[dict[str, float], dict[tuple[str, str], Curve]]] = {}
    refs: dict[str, dict[str, float]] = defaultdict(dict)
    curves: dict[str, dict[tuple[str, str], Curve]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if r.get("kind") != "train" or r.get("group") != "xie2022":
            continue
        if r["scheme"] == "dp":
            d = r["dp"]
            clean = not ((r.get("spec") or {}).get("dp") or {}).get("noisy_queries", True)
            curves[r["task"]][(d["mechanism"], d["calibration"] + (", clean queries" if clean else ""))][float(d["target_epsilon"])] = (r["score"], d["accounted_epsilon"])
        else:
            refs[r["task"]][r["variant"] if r["scheme"] == "none" else f"TextHide ({r['m']}, {r['k']})"] = r["score"]
    for task in sorted(curves):
        out[task] = (refs[task], dict(sorted(curves[task].items())))
    return out


def _rows(refs: dict[str, float], curves: dict[tuple[str, str], Curve]) -> tuple[list[str], list[list[object]]]:
    eps = sorted({e for c in curves.values() for e in c})
    head = ["mechanism", "calibration", *[f"eps={e:g}" for e in eps], "accounted eps at largest"]
    rows: list[list[object]] = [[name, "", *[score] * len(eps), ""] for name, score in sorted(refs.items())]
    for (mech, cal), c in curves.items():
        last = c[max(c)][1]
        rows.append([mech, cal.replace("paper", "paper (not DP)"), *[c.get(e, (None,))[0] for e in eps], f"{last:.4g}"])
    return head, rows


def dp_utility_md(records: list[dict]) -> str | None:
    parts = [f"{task}:\n\n" + md_table(*_rows(refs, curves)) for task, (refs, curves) in _curves(records).items()]
    return "\n\n".join(parts) or None


@section("dp_utility", "DP instance encoding: utility against epsilon (Xie & Hong 2022, Figure 1)", order=60,
         markdown=dp_utility_md)
def dp_utility(records: list[dict], ctx: Context) -> str | None:
    data = _curves(records)
    if not data:
        return None
    import matplotlib.pyplot as plt

    html = ("<p>Each point trains the head on DP TextHide (16, 4) encodings; dev queries are clipped, masked and noised "
            "too. <em>paper</em> calibration is <strong>not a valid DP guarantee</strong>: the last column gives the "
            "epsilon such a run really has.</p>")
    for task, (refs, curves) in data.items():
        html += f"<h3>{task}</h3>" + table(*_rows(refs, curves))
        fig, ax = plt.subplots(figsize=(5.5, 3.2))
        for (mech, cal), c in curves.items():
            es = sorted(c)
            ax.plot(es, [c[e][0] for e in es], marker="o", linestyle="-" if cal.startswith("correct") else "--", label=f"{mech}, {cal}")
        for i, (name, score) in enumerate(sorted(refs.items())):
            ax.axhline(score, color=f"C{len(curves) + i}", linestyle=":", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("target epsilon")
        ax.set_ylabel("dev score")
        ax.set_title(f"{task}: utility vs epsilon")
        ax.legend(fontsize=7)
        html += ctx.figure(fig, f"dp_utility_{task}", f"{task} utility against epsilon")
    return html
