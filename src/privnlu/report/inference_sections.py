"""Report section: how a TextHide model answers a query (``huang2020-query-inference`` records)."""

from __future__ import annotations

from .content import Content, Table, code_text
from .registry import section

HEAD = ["task", "(m, k)", "dev sentences", "majority class", "recorded dev score (one mask per query)",
        "one mask: mean (sd) over repetitions", "one mask: labels changed between repetitions (%)",
        "fresh masks averaged", "pool average (predict's default)", "pool average - one mask (mean)",
        "mean probability of the answer: one mask / pool average"]


def _recs(records: list[dict]) -> list[dict]:
    return sorted(records,
                  key=lambda r: (r["task"], float(r["settings"]["m"]), r["settings"]["k"]))


def _rows(recs: list[dict]) -> list[list[object]]:
    rows = []
    for r in recs:
        s, one, avg = r["settings"], r["one_mask"], r["pool_average"]
        flag = " (no useful utility)" if avg["accuracy"] <= r["chance_utility"] else ""
        rows.append([r["task"], f"({s['m']}, {s['k']})", r["n_dev"], r["chance_utility"], r["recorded_dev_score"],
                     f"{one['mean']:.2f} ({one['sd']:.2f}), {len(one['accuracy'])} repetitions", one["label_changes"],
                     f"{r['samples']['accuracy']:.2f} ({r['samples']['n']} masks)", f"{avg['accuracy']:.2f}{flag}",
                     round(avg["accuracy"] - one["mean"], 2), f"{one['confidence']:.3f} / {avg['confidence']:.3f}"])
    return rows


def _note(recs: list[dict]) -> str:
    s = recs[0]["settings"]
    return (f"Frozen MiniLM, TextHide-intra, {s['train_limit']} training sentences, {s['epochs']} epochs, batch "
            f"{s['batch_size']}, head lr {s['lr']:g}, seed {s['seed']}; every dev sentence predicted through "
            "`privnlu.predict.load` (the path users take). One mask: each query multiplied by one random mask of the "
            "owner's pool, as the paper's code and privnlu's recorded dev scores do (`--samples 1`); pool average: "
            "the head's probabilities averaged over every mask of the pool (`privnlu predict`'s default, the same "
            "answer every time); fresh masks: `--samples N`. One training run per (m, k): the differences between "
            "inference rules are measured on the same model, not across training seeds.")


@section("query_inference", "TextHide models: one random mask per query against the pool average", order=16,
         kinds=("query_inference",))
def query_inference(records: list[dict]) -> Content:
    """Dev accuracy of one model under each inference rule."""
    recs = _recs(records)
    return [Table(HEAD, _rows(recs)), code_text(_note(recs))]
