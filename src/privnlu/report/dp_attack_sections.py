"""Report section for the reconstruction attack against DP instance encoding (Xie & Hong 2022, Figure 2).

One table per task: a row per (mechanism, calibration), a column per target epsilon, each cell the attack's
lenient / strict success (% of the private originals), and the epsilon the release really has under the paper's
calibration. Plain TextHide (16, 4), the figure's reference, is set beside the paper's "around 85 %". The figure
itself is an image: only its text's claims are printed beside.
"""

from __future__ import annotations

from collections import defaultdict

from ..paper_values import compare_cells, lookup, values
from .markup import Markup, heading, join, para
from .registry import Context, md_table, section, table


def is_dp_release(r: dict) -> bool:
    return any(c.get("dp_calibration") for c in r.get("conditions", {}).values())


def _nmf(c: dict) -> dict:
    m = c["methods"]
    return m.get("nmf") or next(iter(m.values()))


def _lenient(v: dict) -> float:
    return v.get("success_lenient", v.get("success"))


def _figure2(records: list[dict]):
    """task -> (TextHide references, {(mechanism, calibration): {epsilon: (lenient, strict, accounted)}})."""
    refs: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    grid: dict[str, dict[tuple[str, str], dict[float, tuple]]] = defaultdict(lambda: defaultdict(dict))
    attacks = [r for r in records if r.get("kind") == "attack" and r.get("attack") == "reconstruct"]
    if not any(is_dp_release(r) for r in attacks):
        return {}
    for r in attacks:
        for name, c in r["conditions"].items():
            v = _nmf(c)
            cal = c.get("dp_calibration")
            if cal:
                grid[r["task"]][(cal["mechanism"], cal["calibration"])][float(cal["target_epsilon"])] = (
                    _lenient(v), v.get("success_strict"), cal["accounted_epsilon"], cal.get("noise"))
            elif str(c["m"]) == "16" and int(c["k"]) == 4:
                refs[r["task"]].append((name, v))
    return {t: (refs[t], grid[t]) for t in sorted(grid)}


def _rows(task: str, refs, grid) -> tuple[list[str], list[list[object]]]:
    eps = sorted({e for c in grid.values() for e in c})
    head = ["release", "paper (Figure 2)", *[f"eps={e:g}" for e in eps]]
    rows: list[list[object]] = []
    paper = lookup("xie2022", "Figure 2", f"TextHide (16, 4), {'SST-2' if task == 'sst2' else 'CoLA'}", "attack success")
    for _, v in refs:
        p, o, d = compare_cells(_lenient(v), paper)
        rows.append(["TextHide (16, 4), no noise: lenient % (diff to paper)", p, *[f"{o} ({d})"] * len(eps)])
    for (mech, cal), c in sorted(grid.items()):
        name = f"{mech}, {'paper (not DP)' if cal == 'paper' else 'correct'}"
        rows.append([f"{name}: lenient / strict %", "-",
                     *[f"{c[e][0]:.0f} / {c[e][1]:.0f}" if e in c and c[e][1] is not None else
                       (f"{c[e][0]:.0f}" if e in c else "-") for e in eps]])
        if cal == "paper":
            rows.append([f"{name}: accounted epsilon", "-", *[f"{c[e][2]:.3g}" if e in c else "-" for e in eps]])
        if c and all(p[3] is not None for p in c.values()):
            what = "noise sigma" if mech == "gaussian" else "noise scale b"
            rows.append([f"{name}: {what} per coordinate", "-", *[f"{c[e][3]:.3g}" if e in c else "-" for e in eps]])
    return head, rows


def _claims() -> str:
    claims = [c.rstrip(".") for c in dict.fromkeys(v.claim for v in values("xie2022", "Figure 2") if v.claim)]
    return "; ".join(f"({i}) {c}" for i, c in enumerate(claims, 1)) + "."  # one per claim, in order


NOTE = ("The paper's scheme (no sign mask, m = 0, k = 4), 100 private training examples x 50 encodings, privnlu's "
        "nmf attack (the strongest clustering); success in % of the 100 originals, lenient (nearest of the 100) and "
        "strict (with 5,000 distractors); chance 1 %. correct: noise calibrated per example for all k x 50 "
        "encodings of the release (the accounted epsilon is the target); paper (not DP): Theorems 3 and 4 per "
        "encoding, as privnlu reads them, not a valid DP guarantee (its accounted epsilon row gives what the release "
        "really has). Noise: the Gaussian's sigma or the Laplace's scale b per coordinate of a representation clipped "
        "to norm 1 (L1 for the correct Laplace, L2 otherwise). The paper's Figure 2 is an image; the claims of its text (privnlu.paper_values): ")


def dp_attack_md(records: list[dict]) -> str | None:
    data = _figure2(records)
    if not data:
        return None
    return "\n\n".join(f"{task}:\n\n" + md_table(*_rows(task, *v)) for task, v in data.items()) + "\n\n" + NOTE + _claims()


@section("dp_attack", "DP instance encoding: reconstruction attack against epsilon (Xie & Hong 2022, Figure 2)",
         order=61, markdown=dp_attack_md)
def dp_attack(records: list[dict], ctx: Context) -> Markup | None:
    data = _figure2(records)
    if not data:
        return None
    return join(para(NOTE + _claims()), *(join(heading(3, task), table(*_rows(task, *v))) for task, v in data.items()))


AUDIT_HEAD = ["mechanism", "case", "claimed epsilon", "accounted epsilon", "delta", "eps_lb (95 %)", "draws",
              "largest certifiable epsilon", "verdict"]


def _audit_label(name: str) -> str:
    """``dp-gaussian-paper`` -> ``gaussian, paper (not DP)``; other mechanisms (d_chi) keep their name."""
    parts = name.split("-")
    if len(parts) == 3 and parts[0] == "dp":
        return f"{parts[1]}, {'paper (not DP)' if parts[2] == 'paper' else parts[2]}"
    return name


def _audit_rows(records: list[dict]) -> list[list[object]]:
    """One row per audited claim of the empirical DP audits (records of kind "dp-audit"); DP instance encoding's
    claims sorted by mechanism, calibration, claim and case."""
    rows = []
    for i, r in enumerate(records):
        if r.get("kind") != "dp-audit":
            continue
        for a in r["results"]:
            d = a.get("details") or {}
            case = " / ".join(d["tokens"]) if "tokens" in d else ", ".join(
                f"{k} {v}" for k, v in (r.get("case") or {}).items() if k in ("dim", "k", "encodings"))
            dp = a["mechanism"].startswith("dp-")
            c = r.get("case") or {}
            key = (0, a["mechanism"], a["claimed_epsilon"], c.get("dim", 0), c.get("k", 0) * c.get("encodings", 0)) \
                if dp else (1, i)
            rows.append((key, [_audit_label(a["mechanism"]), case, f"{a['claimed_epsilon']:.3g}",
                               f"{d['accounted_epsilon']:.3g}" if "accounted_epsilon" in d else "-", f"{a['delta']:g}",
                               f"{a['eps_lb']:.2f}", a["draws"], f"{a['power']:.2f}",
                               "caught" if a["violated"] else "passes"]))
    return [row for _, row in sorted(rows, key=lambda kr: kr[0])]


AUDIT_NOTE = ("Each row tests one claim on the real mechanism: worst-case neighbours at the clipping boundary, one trial "
              "= every encoding an example takes part in (case: dimension, k, encodings per example), the draws per "
              "hypothesis, half of them held out. eps_lb: a 95 % lower bound on the epsilon of what was drawn; "
              "caught: eps_lb is above the claimed epsilon, which refutes the claim; passes: not refuted, which is not "
              "a proof (the audit cannot certify more than the largest certifiable epsilon, and it sees little of a "
              "Gaussian's tails at delta > 0). Accounted epsilon: what privnlu's accountant says the same noise gives "
              "(a sound upper bound); for the correct calibration it is the claim, for the paper's it is what the "
              "release really has.")


def dp_audit_md(records: list[dict]) -> str | None:
    rows = _audit_rows(records)
    if not rows:
        return None
    dp = any(r.get("kind") == "dp-audit" and any(a["mechanism"].startswith("dp-") for a in r["results"]) for r in records)
    return md_table(AUDIT_HEAD, rows) + (f"\n\n{AUDIT_NOTE}" if dp else "")


@section("dp_audit", "Empirical DP audits: a lower bound on epsilon beside the claim", order=52, markdown=dp_audit_md)
def dp_audit(records: list[dict], ctx: Context) -> Markup | None:
    rows = _audit_rows(records)
    return table(AUDIT_HEAD, rows) if rows else None
