"""Report sections for attacks on instance encoding (results with kind "attack")."""

from __future__ import annotations

import html

from ..attacks.leakage import METRICS
from .registry import Context, section, table

TITLES = {
    "search": "similarity search (TextHide section 4.4, Table 3)",
    "invert": "representation reconstruction + search (TextHide appendix C.3, Table 8)",
}


def _attacks(records: list[dict], names: set[str]) -> list[dict]:
    return [r for r in records if r.get("kind") == "attack" and r.get("attack") in names and r.get("mode") != "payload"]


@section("attack_leakage", "Attacks: leakage of privatized representations", order=40)
def attack_leakage(records: list[dict], ctx: Context) -> str | None:
    runs = _attacks(records, set(TITLES))
    if not runs:
        return None
    out = ("<p>Each row attacks one condition; metrics are means over the queries (x100): exact match (identity), word "
           "Jaccard, TF-IDF cosine, same label and SBERT cosine between the retrieved and the true sentence. "
           "The attacker gets only what the stated threat model grants.</p>")
    for r in runs:
        rows = [[name, c["m"], c["k"], *[c["metrics"].get(m) for m in METRICS]] for name, c in r["conditions"].items()]
        tm = r["threat_model"]
        out += (f"<h3>{html.escape(r['task'])}: {html.escape(TITLES[r['attack']])}</h3>"
                f"<p class='note'>threat model <b>{html.escape(tm['name'])}</b>: grants {html.escape(', '.join(tm['grants']))}; "
                f"{r['n_queries']} queries, corpus {html.escape(str(r.get('corpus')))} ({r.get('corpus_size')} sentences).</p>"
                + table(["condition", "m", "k", *METRICS], rows))
    return out


@section("attack_reconstruction", "Attacks: reconstruction of TextHide encodings (Xie & Hong 2021)", order=41)
def attack_reconstruction(records: list[dict], ctx: Context) -> str | None:
    runs = _attacks(records, {"reconstruct"})
    if not runs:
        return None
    out = ("<p>Success: the fraction of private originals for which some recovered vector's nearest original by "
           "cosine (between absolute values) is the true one; chance is 1/n. Paper (Table 1, m = 1, k = 1/2/4/6): "
           "CoLA 100/88/91/93 %, SST-2 100/92/95/88 %.</p>")
    for r in runs:
        methods = sorted({m for c in r["conditions"].values() for m in c["methods"]})
        rows = []
        for name, c in r["conditions"].items():
            row: list[object] = [name, c["m"], c["k"], c["n_encodings"]]
            for m in methods:
                v = c["methods"].get(m, {})
                row += [v.get("success"), v.get("cosine_to_truth"), v.get("sentence_identity")]
            rows.append(row + [c["attack_seconds"]])
        head = ["condition", "m", "k", "encodings"]
        for m in methods:
            head += [f"{m} success %", f"{m} cos", f"{m} sentence %"]
        out += (f"<h3>{html.escape(r['task'])}: {r['n_queries']} private examples x {r.get('epochs')} epochs</h3>"
                + table(head + ["seconds"], rows))
    return out


@section("attack_payload", "Attacks on a user's own encoding file", order=42)
def attack_payload(records: list[dict], ctx: Context) -> str | None:
    runs = [r for r in records if r.get("kind") == "attack" and r.get("mode") == "payload"]
    if not runs:
        return None
    rows = []
    for r in runs:
        meta = r.get("payload_meta", {})
        if r["attack"] == "search":
            rows.append([r["payload"], "search", meta.get("m"), meta.get("k"), r["n_encodings"], "-", r.get("mean_cosine")])
        else:
            for m, v in r.get("methods", {}).items():
                rows.append([r["payload"], f"reconstruct ({m})", meta.get("m"), meta.get("k"), r["n_encodings"], v["groups"], v["mean_cosine"]])
    return ("<p>No key is read, so there is no success rate: the mean cosine between each answer (an encoding, or a "
            "recovered original) and its nearest candidate sentence's representation. High values mean the encodings "
            "map back to specific sentences; the per-item answers are in the results JSON.</p>"
            + table(["file", "attack", "m", "k", "encodings", "recovered originals", "mean cosine"], rows))
