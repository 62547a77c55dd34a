"""Report sections for training under d_chi-privacy (Qu et al. 2021, Tables 4-7): utility-vs-eta frontier, MLM pretraining."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .registry import Context, md_table, section, table


def _finetune(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "dchi_finetune"]


def _label(r: dict) -> str:
    return f"{r['encoder']}/{r['mode']}" + (f" [{r['tag']}]" if r.get("tag") else "")


def _rows(recs: list[dict]) -> list[list[object]]:
    key = lambda r: (r["task"], r.get("tag") or "", r["encoder"], r["mode"], r["eta"] or 0.0)
    return [[r["task"], r.get("tag") or "", r["encoder"], r["mode"], "" if r["eta"] is None else f"{r['eta']:g}",
             r["train_size"], r["dev_size"], r["epochs"], f"{r['score']:.2f}"] for r in sorted(recs, key=key)]


FT_HEADERS = ["task", "tag", "encoder", "mode", "eta", "train", "dev", "epochs", "dev score"]


def _finetune_md(records: list[dict]) -> str | None:
    recs = _finetune(records)
    return md_table(FT_HEADERS, _rows(recs)) if recs else None


@section("dchi_finetune", "d_chi: utility against eta under privacy-constrained fine-tuning (paper Tables 4-5)",
         order=44, markdown=_finetune_md)
def dchi_finetune(records: list[dict], ctx: Context) -> str | None:
    recs = _finetune(records)
    if not recs:
        return None
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in recs})
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.2 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        scores: dict[tuple[str, str, float | None], list[float]] = defaultdict(list)  # runs with other seeds: mean
        for r in (r for r in recs if r["task"] == task):
            scores[(_label(r), r["encoder"], r["eta"])].append(r["score"])
        lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for (name, encoder, eta), vals in sorted(scores.items(), key=lambda kv: (kv[0][0], kv[0][2] or 0.0)):
            mean = sum(vals) / len(vals)
            if eta is None:
                ax.axhline(mean, ls="--" if encoder == "transformer" else ":", lw=1, color="k",
                           label=f"{name} (no privacy)")
            else:
                lines[name].append((eta, mean))
        for name, pts in sorted(lines.items()):
            ax.plot(*zip(*pts), "o-", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("eta (larger = less noise)")
        ax.set_ylabel("dev score")
        ax.set_title(task)
        ax.legend(fontsize=6)
    return (ctx.figure(fig, "dchi_finetune", "dev score against eta per mode and encoder")
            + "<p>Train and dev inputs privatized once by the user; the provider never updates the user side. "
              "Points are means over the runs (seeds) of one setting; the table lists every run.</p>"
            + table(FT_HEADERS, _rows(recs)))


def _pretrain(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "dchi_pretrain"]


PT_HEADERS = ["objective", "eta", "input", "start encoder", "warm-up steps", "adapt steps", "acc. at start (clean)",
              "acc. at start (privatized)", "acc. after (clean)", "acc. after (privatized)", "loss first", "loss last"]


def _start(r: dict) -> str:
    """The encoder a run started from: a dchi-pretrain ENCODER folder is named by its run folder."""
    path = Path(r["model"])
    return path.parent.name if path.name == "encoder" else path.name


def _pretrain_rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for r in sorted(recs, key=lambda r: (r["objective"], r["steps_done"]["adapt"])):
        e = r["evals"]  # 'after warm-up' = the loaded head's accuracy when the run skipped the warm-up (--init-head)
        rows.append([r["objective"], f"{r['eta']:g}", r["mechanism"], _start(r), r["steps_done"]["warmup"],
                     r["steps_done"]["adapt"], e.get("clean_after_warmup"), e.get("private_after_warmup"),
                     e.get("clean_after_adapt"), e.get("private_after_adapt"), r["loss_first"].get("adapt"),
                     r["loss_last"].get("adapt")])
    return [[f"{v:.4f}" if isinstance(v, float) else v for v in row] for row in rows]


def _pretrain_md(records: list[dict]) -> str | None:
    recs = _pretrain(records)
    return md_table(PT_HEADERS, _pretrain_rows(recs)) if recs else None


@section("dchi_pretrain", "d_chi: privacy-adaptive MLM pretraining (paper Tables 6-7)", order=45, markdown=_pretrain_md)
def dchi_pretrain(records: list[dict], ctx: Context) -> str | None:
    recs = _pretrain(records)
    if not recs:
        return None
    return ("<p>Masked-token accuracy (predicting the original token) on held-out corpus text; "
            "'privatized' = inputs privatized at eta; 'at start' = after the clean warm-up of the head, or of the "
            "loaded head (--init-head). Each fine-tuned checkpoint appears in the fine-tuning table under its tag.</p>"
            + table(PT_HEADERS, _pretrain_rows(recs)))
