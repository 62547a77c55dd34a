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
    return [r for r in records if r.get("kind") == "attack" and r.get("attack") in names]


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
