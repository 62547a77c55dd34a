"""Report sections for DP-SGD (Abadi et al. 2016, with Opacus): utility at each epsilon beside non-private training
at the same budget and the published anchors; and the one-run empirical audit (Steinke et al. 2023) of its claim.

DP-SGD is not one of the four papers' methods: Xie & Hong 2022 position DP instance encoding against it, and their
claims about it are printed beside the table.
"""

from __future__ import annotations

from collections import defaultdict

from ..paper_values import values
from ..schemes import from_record
from .content import Content, Para, Table, html_only
from .registry import section

HEAD = ["run", "target epsilon", "accounted epsilon (delta)", "noise multiplier", "sampling rate q", "steps",
        "clip", "train loss, last epoch", "accuracy", "vs no privacy", "majority class"]
AUDIT_HEAD = ["run", "claimed epsilon (delta)", "noise multiplier", "canaries m", "guesses r", "correct v",
              "epsilon lower bound (95 %)", "verdict"]


def _is_dp_sgd(r: dict) -> bool:
    return from_record(r).release == "model"


def groups(records: list[dict]) -> dict[tuple, list[dict]]:
    """DP-SGD runs with the non-private runs of the same recipe group, per (task, mode, train size, epochs)."""
    groups_with_sgd = {r.get("group") for r in records if _is_dp_sgd(r)}
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if r.get("group") in groups_with_sgd and (
                _is_dp_sgd(r) or from_record(r).release == "none"):
            epochs = (r.get("spec") or {}).get("train", {}).get("epochs")
            out[(r["task"], r.get("mode", "frozen"), r.get("n_train"), epochs)].append(r)
    return {k: sorted(v, key=lambda r: (_is_dp_sgd(r), (r.get("dp") or {}).get("target_epsilon", 0)))
            for k, v in sorted(out.items(), key=lambda kv: tuple(str(x) for x in kv[0]))}


def _majority(r: dict) -> float | None:
    m = r.get("majority") or {}
    return m.get("accuracy", m.get("score"))


def _score(r: dict) -> float:
    ev = next(iter((r.get("eval") or {}).values()), {})
    return 100 * ev["accuracy"] if "accuracy" in ev else float(r["score"])


def _rates(r: dict) -> tuple[float, float]:
    return (r["spec"]["train"]["lr"], r["spec"].get("encoder_lr", 0.0))


def rows(recs: list[dict]) -> list[list[object]]:
    base = next((r for r in recs if not _is_dp_sgd(r)), None)
    several = len({_rates(r) for r in recs if _is_dp_sgd(r)}) > 1
    out = []
    for r in recs:
        d = r.get("dp") or {}
        gap = None if base is None or r is base else round(_score(r) - _score(base), 2)
        name = "no privacy" if r is base else "DP-SGD" + (" (head lr {:g}, encoder lr {:g})".format(*_rates(r))
                                                           if several else "")
        out.append([name, d.get("target_epsilon", "-"),
                    f"{d['epsilon']:.3g} ({d['delta']:.2g})" if d else "none", d.get("noise_multiplier", "-"),
                    d.get("sample_rate", "-"), d.get("steps", "-"), d.get("clip", "-"),
                    round(r["history"][-1]["train_loss"], 3) if r.get("history") else "-", round(_score(r), 2),
                    "-" if gap is None else f"{gap:+.2f}", _majority(r)])
    return out


def _setting(key: tuple, recs: list[dict]) -> str:
    task, mode, n, epochs = key
    r0 = recs[0]
    train = (r0.get("spec") or {}).get("train", {})
    enc = (lambda r: f", encoder lr {r['spec'].get('encoder_lr', 0):g}") if mode == "joint" else (lambda r: "")
    lrs = "; ".join(sorted({f"{'DP-SGD' if _is_dp_sgd(r) else 'no privacy'}: head lr {r['spec']['train']['lr']:g}"
                            + enc(r) for r in recs}))
    return (f"{task}, {'encoder and head fine-tuned' if mode == 'joint' else 'head on a frozen encoder'}, {n} training "
            f"examples, {epochs} epochs, (expected) batch {train.get('batch_size')}, encoder {r0.get('encoder', {}).get('model', '')}"
            f"; learning rates: {lrs}. Accuracy on the full dev set, last epoch.")


def anchors() -> list[list[object]]:
    return [[v.cite(), v.row, v.column, v.value, v.note] for v in values("li2022")]


def claims() -> str:
    return " ".join(f"{v.cite()}: \"{v.claim}\"." for v in values("xie2022") if "DP-SGD" in v.row)


ANCHOR_HEAD = ["source", "setting", "budget", "accuracy", "note"]
NOTE = ("Published anchors are not our setting: they fine-tune RoBERTa-large (355 M parameters) on all of SST-2 "
        "with GPU budgets; these runs fine-tune MiniLM-L6 (22 M) on a CPU-scale slice.")


@section("dp_sgd", "DP-SGD: utility at each epsilon beside non-private training (beyond the papers)", order=62,
         kinds=("train",))
def dp_sgd(records: list[dict]) -> Content | None:
    g = groups(records)
    if not g:
        return None
    return [*[(Para(_setting(k, recs)), Table(HEAD, rows(recs))) for k, recs in g.items()],
            html_only(Para("Published anchors:")), Table(ANCHOR_HEAD, anchors()), Para(f"{NOTE} {claims()}")]


# -- the empirical audit ----------------------------------------------------------------------------------------

def audit_rows(records: list[dict]) -> list[list[object]]:
    out = []
    for r in sorted(records, key=lambda r: r.get("name", "")):
        sigma = f"{r['noise_multiplier']:.3g}" + (f" (calibrated / {r['under_noise']:g})" if r.get("under_noise") else "")
        out.append([r.get("name", "-"), f"{r['claimed_epsilon']:g} ({r['delta']:.2g})", sigma, r["canaries"],
                    r["guesses"], r["correct"], round(r["epsilon_lb"], 3), r["verdict"]])
    return out


@section("dp_sgd_audit", "DP-SGD: the one-run empirical audit of its claim (Steinke et al. 2023)", order=63,
         kinds=("dp-sgd-audit",))
def dp_sgd_audit(records: list[dict]) -> Content:
    return [Table(AUDIT_HEAD, audit_rows(records))]
