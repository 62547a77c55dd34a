"""Report sections for training under d_chi-privacy (Qu et al. 2021, Tables 4-7): utility-vs-eta frontier, MLM pretraining."""

from __future__ import annotations

import re
from collections import defaultdict
from functools import partial
from pathlib import Path

from ..stats import paired_t_test
from .content import Content, Figure, Para, Table, either
from .registry import section


def _finetune(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "dchi_finetune"]


def precision(r: dict) -> str:
    """The precision a fine-tuning record was trained in (``bf16_used``): runs are only compared within one."""
    return "bfloat16" if r.get("bf16_used") else "float32"


#: table45's key for a (tag, precision): bfloat16, the precision of the committed Tables 4-5, keeps the bare tag
_tag_key = lambda tag, prec: tag if prec == "bfloat16" else f"{tag}|{prec}"  # noqa: E731


def _label(r: dict) -> str:
    return f"{r['encoder']}/{r['mode']}" + (f" [{r['tag']}]" if r.get("tag") else "")


def _rows(recs: list[dict]) -> list[list[object]]:
    key = lambda r: (r["task"], r.get("tag") or "", r["encoder"], r["mode"], r["eta"] or 0.0)
    return [[r["task"], r.get("tag") or "", r["encoder"], r["mode"], "" if r["eta"] is None else f"{r['eta']:g}",
             r["train_size"], r["dev_size"], r["epochs"], f"{r['score']:.2f}"] for r in sorted(recs, key=key)]


FT_HEADERS = ["task", "tag", "encoder", "mode", "eta", "train", "dev", "epochs", "dev score"]


FT_MD_HEADERS = ["task", "tag", "encoder", "mode", "eta", "train", "dev", "epochs", "precision", "runs",
                 "dev accuracy % per seed", "mean"]


def _compact_rows(recs: list[dict]) -> list[list[object]]:
    """One row per setting (task, tag, encoder, mode, eta, budget): every seed's score and their mean."""
    groups: dict[tuple, list[tuple[int | None, float]]] = {}
    for r in recs:
        key = (r["task"], r.get("tag") or "", r["encoder"], r["mode"], r["eta"] or 0.0, r["train_size"], r["dev_size"],
               r["epochs"], precision(r))
        acc = (r.get("metrics") or {}).get("accuracy")
        groups.setdefault(key, []).append((r.get("seed"), r["score"] if acc is None else 100.0 * acc))
    rows = []
    for (task, tag, enc, mode, eta, train, dev, epochs, prec), runs in sorted(groups.items(), key=lambda kv: tuple(
            str(x) if i < 4 else x for i, x in enumerate(kv[0]))):
        runs = sorted(runs, key=lambda sr: (sr[0] is None, sr[0] if sr[0] is not None else 0))
        per = " / ".join(f"{v:.2f}" + ("" if s is not None else " (unseeded)") for s, v in runs)
        rows.append([task, tag, enc, mode, "" if mode == "null" else f"{eta:g}", train, dev, epochs, prec, len(runs), per,
                     f"{sum(v for _, v in runs) / len(runs):.2f}"])
    return rows


def _finetune_plot(recs: list[dict]):
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
    return fig


@section("dchi_finetune", "d_chi: utility against eta under privacy-constrained fine-tuning (paper Tables 4-5)",
         order=44, kinds=("dchi_finetune",))
def dchi_finetune(recs: list[dict]) -> Content:
    """The page: a curve per mode and encoder and every run; the docs: one row per setting, every seed."""
    return either([Figure(partial(_finetune_plot, recs), "dchi_finetune", "dev score against eta per mode and encoder"),
                   Para("Train and dev inputs privatized once by the user; the provider never updates the user side. "
                        "Points are means over the runs (seeds) of one setting; the table lists every run."),
                   Table(FT_HEADERS, _rows(recs))],
                  [Para("Dev accuracy (%) of every run, one row per setting, seeds in increasing order (seed 0 "
                        "first); a task scored by another metric (MRPC: F1) has that score in its records too. A "
                        "'tag' names the pretrained encoder a run starts from (blank: the starting encoder, the "
                        "packaged MiniLM unless the run's settings name another)."),
                   Table(FT_MD_HEADERS, _compact_rows(recs))])


def _pretrain(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "dchi_pretrain"]


PT_HEADERS = ["objective", "eta", "input", "start encoder", "precision", "warm-up steps", "adapt steps",
              "acc. at start (clean)",
              "acc. at start (privatized)", "acc. after (clean)", "acc. after (privatized)", "loss first", "loss last"]


def _start(r: dict) -> str:
    """The encoder a run started from: a `dchi pretrain` OUT/encoder folder is named by its run folder."""
    if isinstance(r["model"], dict):  # a reference: the folder's name (and fingerprint)
        return str(r["model"].get("name"))
    path = Path(r["model"])
    return path.parent.name if path.name == "encoder" else path.name


def _pretrain_rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for r in sorted(recs, key=lambda r: (r["objective"], r["steps_done"]["adapt"])):
        e = r["evals"]  # 'after warm-up' = the loaded head's accuracy when the run skipped the warm-up (--init-head)
        rows.append([r["objective"], f"{r['eta']:g}", r["mechanism"], _start(r),
                     "bfloat16" if r.get("bf16") else "float32", r["steps_done"]["warmup"],
                     r["steps_done"]["adapt"], e.get("clean_after_warmup"), e.get("private_after_warmup"),
                     e.get("clean_after_adapt"), e.get("private_after_adapt"), r["loss_first"].get("adapt"),
                     r["loss_last"].get("adapt")])
    return [[f"{v:.4f}" if isinstance(v, float) else v for v in row] for row in rows]


PT_NOTE = ("Masked-token accuracy (predicting the original token) on held-out corpus text, with clean input and "
           "with input privatized at eta ('input': rep = M_rep vectors, text = M_txt tokens); 'at start' = after "
           "the clean warm-up of the head, or for the loaded head (--init-head) when the run skips the warm-up. A "
           "run that starts from another run's encoder continues it: its adaptation steps add to that run's. "
           "'loss first' / 'loss last': the mean adaptation loss over the first and the last checkpoint interval. "
           "Each pretrained encoder is fine-tuned under the tag pt-<objective>-<steps in all>, with -b<batch> before the "
           "steps for a batch other than 16.")


@section("dchi_pretrain", "d_chi: privacy-adaptive MLM pretraining (paper Tables 6-7)", order=45,
         kinds=("dchi_pretrain",))
def dchi_pretrain(recs: list[dict]) -> Content:
    return [Para(PT_NOTE), Table(PT_HEADERS, _pretrain_rows(recs))]


# -- Tables 4-5 as the paper prints them: accuracy per (eta, encoder, mode), seeds paired, paper beside ours ------

T45_HEADERS = ["task", "encoder", "mode", "eta", "precision", "seeds", "paper", "ours", "ours - paper", "majority class",
               "text - token (p)", "vs other encoder (p)", "drop from Null vs other encoder's (p)"]
T45_NOTE = ("Accuracy (fraction, as the paper prints it), mean over seeds of the runs of one training precision "
            "(bfloat16 or float32; runs of different precisions are never compared); runs with the same seed share the "
            "privatized data and order, and are compared by Student's paired t-test over seeds (the paper's test; "
            "its pairing unit is not stated). The paper's Table 5 is QQP; our MRPC rows are compared with it as a "
            "stand-in. 'text - token': this mode minus token-rep, same encoder (the paper's Delta 1 / Delta 3); "
            "'vs other encoder': minus the other encoder, same mode; 'drop from Null vs other encoder's': this "
            "encoder's loss against its own Null Privacy run minus the other encoder's loss (positive: this encoder "
            "degrades more; the paper's 'BERT is less robust' reading). 'majority class': the dev accuracy of always "
            "predicting train's most frequent label, from the records that carry it ('not recorded' where none of the "
            "records shown does); a mean at or under it is marked, and such a run has learned nothing usable.")


def _table45_rows(records: list[dict]) -> list[list[object]]:
    from ..paper_values import compare_cells
    from ..paper_values.qu2021 import finetune as paper_cell

    def paired(r: dict, key: str) -> str:
        t = r.get(key, {})
        return "" if t.get("p") is None else f"{t['mean_diff']:+.4f} (p={t['p']:.3f})"

    def floor(r: dict) -> str:
        m = r.get("majority")
        if m is None:
            return "not recorded"
        return f"{m:.4f}" + (" (ours at or under it)" if r["mean"] <= m + 1e-9 else "")

    return [[r["task"], r["encoder"], r["mode"], "" if r["eta"] is None else f"{r['eta']:g}", r["precision"],
             len(r["seeds"]),
             *compare_cells(r["mean"], paper_cell(r["task"], r["encoder"], r["mode"], r["eta"]), digits=4),
             floor(r), paired(r, "vs_token"), paired(r, "vs_other_encoder"), paired(r, "drop_vs_other_encoder")]
            for r in table45(_finetune(records)) if not r["tag"]]


@section("dchi_table45", "d_chi: privacy-constrained fine-tuning beside the paper (Tables 4-5)", order=44,
         kinds=("dchi_finetune",))
def dchi_table45(records: list[dict]) -> Content | None:
    rows = _table45_rows(records)
    return [Para(T45_NOTE), Table(T45_HEADERS, rows)] if rows else None


#: ``pt-<objective>[-b<batch>]-<steps>``, the objective optionally led by the pretraining input
#: (``pt-text-denoising-1000``); a batch size other than the CPU curve's is named (``pt-denoising-b128-12500``)
_PT_TAG = re.compile(r"^pt-([a-z][a-z-]*?)(?:-b(\d+))?-?(\d+)?$")


GAIN_HEADERS = ["task", "mode", "eta", "objective", "steps", "precision", "seeds", "mean gain (accuracy)",
                "paired t-test p",
                "original, ours", "pretrained, ours", "paper: original", "paper: pretrained", "paper: gain",
                "gain: ours - paper"]
GAIN_NOTE = ("Each pretrained encoder fine-tuned like the original, against the original encoder's run of the same "
             "task, mode, eta, seed and training precision (the seed fixes the data order, initialisation and dropout, "
             "and in the qu2021 recipes the privatized data too; bfloat16 and float32 runs are never paired, since "
             "the precision alone changes a run's score): the mean paired gain in accuracy (fraction) and Student's "
             "paired t-test over seeds. The paper's cells: Table 6 (token-representation input) or "
             "Table 7 (text-to-text input), its SST column (QQP for MRPC) at the same eta, the original BERT and the "
             "objective's column; the paper pretrains bert-base for up to 1,000,000 steps at batch 256. Steps are "
             "at batch 16 unless a batch is named. 'rebuilt stage': the runs started from a rerun of the stage from its "
             "settings and seed (its encoder was not kept), whose masked-token accuracies differ from the stage's "
             "record; the accuracies of the encoder they started from are in their records ('stage').")
#: our fine-tuning mode -> the paper's pretraining table; our objective names -> its columns
_PT_TABLE = {"token": "Table 6", "text": "Table 7"}
_PT_COLUMN = {"denoising": "denoising", "vanilla": "vanilla", "probability": "probability"}


def _paper_pt(task: str, mode: str, eta: float, objective: str) -> tuple:
    """The paper's (original, pretrained) accuracy for our (task, mode, eta, objective), or (None, None)."""
    from ..paper_values import lookup

    src, pname = _PT_TABLE.get(mode), {"sst2": "SST", "qqp": "QQP", "mrpc": "QQP"}.get(task)
    col = _PT_COLUMN.get(objective.removeprefix("text-").removeprefix("rep-"))
    if src is None or pname is None or col is None or float(eta) != int(eta):
        return None, None
    orig = lookup("qu2021", src, f"{pname} eta={int(eta)}", "orig")
    new = lookup("qu2021", src, f"{pname} eta={int(eta)}", col)
    return (orig.value if orig else None), (new.value if new else None)


def _pretrain_gains(records: list[dict]) -> dict[tuple, list[tuple[float, float]]]:
    """(task, mode, eta, objective, steps, precision, batch or None, rebuilt stage) -> per seed (accuracy after
    pretraining, the original encoder's)."""
    ft = _finetune(records)
    base = {(r["task"], r["mode"], r["eta"], r.get("seed"), precision(r)): r["metrics"].get("accuracy")
            for r in ft if not r.get("tag")}
    pairs: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for r in ft:
        m = _PT_TAG.match(r.get("tag") or "")
        b = base.get((r["task"], r["mode"], r["eta"], r.get("seed"), precision(r)))
        if m and m.group(3) and b is not None:
            batch = int(m.group(2)) if m.group(2) else None
            rebuilt = bool((r.get("stage") or {}).get("rebuilt"))
            pairs[(r["task"], r["mode"], r["eta"], m.group(1), int(m.group(3)), precision(r), batch, rebuilt)].append(
                (r["metrics"]["accuracy"], b))
    return dict(sorted(pairs.items(), key=lambda kv: tuple(str(x) for x in kv[0][:4]) + kv[0][4:6]
                       + (kv[0][6] or 0, kv[0][7])))


def _f4(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _gain_rows(pairs: dict[tuple, list[tuple[float, float]]]) -> list[list[object]]:

    rows = []
    for (task, mode, eta, obj, steps, prec, batch, rebuilt), ab in pairs.items():
        p = paired_t_test(*map(list, zip(*ab)))["p"] if len(ab) >= 2 else None
        po, pn = _paper_pt(task, mode, eta, obj)
        gain = sum(a - b for a, b in ab) / len(ab)
        at = f"{steps}" + ("" if batch is None else f" (batch {batch})") + (" (rebuilt stage)" if rebuilt else "")
        rows.append([task, mode, f"{eta:g}", obj, steps if at == str(steps) else at, prec,
                     len(ab), f"{gain:+.4f}",
                     "" if p is None else f"{p:.3f}", _f4(sum(b for _, b in ab) / len(ab)),
                     _f4(sum(a for a, _ in ab) / len(ab)), _f4(po), _f4(pn),
                     "-" if po is None or pn is None else f"{pn - po:+.4f}",
                     "-" if po is None or pn is None else f"{gain - (pn - po):+.4f}"])
    return rows


REBUILT_HEADERS = ["stage", "runs from it", "recorded: acc. after (clean)", "(privatized)", "rebuilt: acc. after (clean)",
                   "(privatized)"]
REBUILT_NOTE = ("Rebuilt stages: the masked-token accuracy after adaptation of the encoder the 'rebuilt stage' runs "
                "started from (from those runs' records), beside the committed record of the stage with the same "
                "settings and seed.")


def _rebuilt_rows(records: list[dict]) -> list[list[object]]:
    """One row per rebuilt stage: the committed stage record's accuracies after adaptation (the record of file
    ``pretrain_<stage>.json``, as the qu2021 recipes name it) and the rebuild's."""
    recorded = {Path(str(r.get("_source", ""))).stem.removeprefix("pretrain_"): r.get("evals") or {}
                for r in _pretrain(records)}
    by_stage: dict[str, list[dict]] = defaultdict(list)
    for r in _finetune(records):
        if (r.get("stage") or {}).get("rebuilt"):
            by_stage[r["stage"]["name"]].append(r)
    rows = []
    for name, runs in sorted(by_stage.items()):
        rebuilt, rec = runs[0]["stage"].get("evals") or {}, recorded.get(name, {})
        rows.append([name, len(runs), _f4(rec.get("clean_after_adapt")), _f4(rec.get("private_after_adapt")),
                     _f4(rebuilt.get("clean_after_adapt")), _f4(rebuilt.get("private_after_adapt"))])
    return rows


def _gain_plot(pairs: dict[tuple, list[tuple[float, float]]]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    lines: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    for (task, mode, eta, obj, steps, prec, batch, rebuilt), ab in pairs.items():
        lines[(task, mode, eta, f"{obj} ({prec}{'' if batch is None else f', batch {batch}'}"
                                f"{', rebuilt stage' if rebuilt else ''})")].append((steps, sum(a - b for a, b in ab) / len(ab)))
    for (task, mode, eta, obj), pts in lines.items():
        ax.plot(*zip(*sorted(pts)), "o-", label=f"{task} {mode} eta={eta:g} {obj}")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("privacy-adaptive pretraining steps")
    ax.set_ylabel("accuracy gain over the original encoder")
    ax.legend(fontsize=6)
    return fig


@section("dchi_pretrain_gain", "d_chi: fine-tuning gain against pretraining steps (paper Tables 6-7)", order=46,
         kinds=("dchi_finetune", "dchi_pretrain"))
def dchi_pretrain_gain(records: list[dict]) -> Content | None:
    """Fine-tuning runs tagged ``pt-<objective>-<steps>`` against the untagged (original encoder) run of the same
    task, mode, eta and seed: the paired gain, by pretraining steps."""
    pairs = _pretrain_gains(records)
    if not pairs:
        return None
    rebuilt = _rebuilt_rows(records)
    return [Figure(partial(_gain_plot, pairs), "dchi_pretrain_gain", "paired fine-tuning gain against pretraining steps"),
            Para(GAIN_NOTE), Table(GAIN_HEADERS, _gain_rows(pairs)),
            (Para(REBUILT_NOTE), Table(REBUILT_HEADERS, rebuilt)) if rebuilt else None]


def table45(records: list[dict]) -> list[dict]:
    """Tables 4-5 from fine-tuning records (kind ``dchi_finetune``) of several seeds: per (task, tag, encoder,
    mode, eta) the mean accuracy over seeds, and the paper's paired comparisons with their p-values:
    text vs token (same encoder; the paper's Delta 1 / Delta 3) and transformer vs BiLSTM (same mode)."""
    from collections import defaultdict

    by: dict[tuple, dict[int, float]] = defaultdict(dict)
    floor: dict[str, float] = {}  # task -> the dev accuracy of the majority class (where the records state it)
    for r in records:
        if r.get("kind") != "dchi_finetune" or r.get("seed") is None:
            continue
        acc = r["metrics"].get("accuracy", r["score"])
        by[(r["task"], _tag_key(r.get("tag") or "", precision(r)), r["encoder"], r["mode"], r["eta"])][int(r["seed"])] = \
            float(acc)
        if (r.get("majority") or {}).get("accuracy") is not None:
            floor[r["task"]] = r["majority"]["accuracy"] / 100
    rows = []
    for (task, tag, enc, mode, eta), seeds in sorted(by.items(), key=lambda kv: (kv[0][:4], kv[0][4] or 0.0)):
        bare, _, prec = tag.partition("|")
        row = {"task": task, "tag": bare, "precision": prec or "bfloat16", "encoder": enc, "mode": mode, "eta": eta,
               "seeds": sorted(seeds),
               "mean": sum(seeds.values()) / len(seeds), "majority": floor.get(task)}
        other_enc = "bilstm" if enc == "transformer" else "transformer"
        for name, other in (("vs_token", (task, tag, enc, "token", eta)),
                            ("vs_other_encoder", (task, tag, other_enc, mode, eta))):
            if other == (task, tag, enc, mode, eta) or other not in by:
                continue
            common = sorted(set(seeds) & set(by[other]))
            if len(common) >= 2:
                row[name] = paired_t_test([seeds[s] for s in common], [by[other][s] for s in common])
        # "BERT is less robust than BiLSTM": each encoder's drop from its own Null Privacy run, paired by seed
        mine = _drops(by, (task, tag, enc, mode, eta))
        theirs = _drops(by, (task, tag, other_enc, mode, eta))
        common = sorted(set(mine) & set(theirs))
        if mode != "null" and len(common) >= 2:
            row["drop_vs_other_encoder"] = paired_t_test([mine[s] for s in common], [theirs[s] for s in common])
        rows.append(row)
    return rows


def _drops(by: dict, key: tuple) -> dict[int, float]:
    """Per seed, the Null-privacy accuracy of the same (task, tag, encoder) minus this run's: the cost of privacy."""
    task, tag, enc, _, _ = key
    null, runs = by.get((task, tag, enc, "null", None), {}), by.get(key, {})
    return {s: null[s] - runs[s] for s in set(null) & set(runs)}
