"""Report section for the reconstruction attack against DP instance encoding (Xie & Hong 2022, Figure 2).

One table per task: a row per (mechanism, calibration), a column per target epsilon, each cell the attack's
lenient / strict success (% of the private originals), and the epsilon the release really has under the paper's
calibration. Plain TextHide (16, 4), the figure's reference, is set beside the paper's "around 85 %". The figure
itself is an image: only its text's claims are printed beside.

Beyond the paper, a row also names the attacker when it was noise-aware (its pair network trained on simulated
releases with the public mechanism's noise; records made before that option trained noise-free) or
noise-cancelling (it cancelled the per-batch noise first), and the noise reading when it was Algorithm 1's
per-batch draw (not DP).
"""

from __future__ import annotations

from collections import defaultdict

from ..paper_values import compare_cells, lookup, values
from .content import Content, Heading, Para, Table, either, html_only, markdown_only
from .registry import section


def is_dp_release(r: dict) -> bool:
    return any(c.get("dp_calibration") for c in r.get("conditions", {}).values())


def _nmf(c: dict) -> dict:
    m = c["methods"]
    return m.get("nmf") or next(iter(m.values()))


def _lenient(v: dict) -> float:
    return v.get("success_lenient", v.get("success"))


def attacker_of(c: dict) -> str:
    """``noise-cancelling``, ``noise-aware`` or ``noise-free``: the attacker of a DP release's condition (older
    records: noise-free; ``noise-cancelling``: it cancelled per-batch noise first, and is noise-aware too)."""
    if c.get("attacker_noise_groups") is not None:
        return "noise-cancelling"
    return "noise-aware" if c.get("attacker_noise_aware") else "noise-free"


def reading_of(c: dict) -> str:
    """The noise reading of a DP release's condition (``per-encoding`` for records made before the option)."""
    return (c.get("dp_calibration") or {}).get("noise_reading") or c.get("dp_noise") or "per-encoding"


def _figure2(records: list[dict]):
    """task -> (TextHide references, {(mechanism, calibration, reading, attacker): {epsilon: (lenient, strict,
    accounted, noise, pair accuracy held out, pair accuracy on the release, noise groups found)}})."""
    refs: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    grid: dict[str, dict[tuple[str, str, str, str], dict[float, tuple]]] = defaultdict(lambda: defaultdict(dict))
    attacks = [r for r in records if r.get("attack") == "reconstruct"]
    if not any(is_dp_release(r) for r in attacks):
        return {}
    for r in attacks:
        for name, c in r["conditions"].items():
            v = _nmf(c)
            cal = c.get("dp_calibration")
            if cal:
                key = (cal["mechanism"], cal["calibration"], reading_of(c), attacker_of(c))
                pair = (c.get("pair_accuracy") or {}).get("factorised") or {}
                grid[r["task"]][key][float(cal["target_epsilon"])] = (
                    _lenient(v), v.get("success_strict"), cal["accounted_epsilon"], cal.get("noise"),
                    pair.get("heldout"), (pair.get("release") or {}).get("balanced_accuracy"),
                    c.get("attacker_noise_groups"))
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
    order = {"per-encoding": 0, "per-batch": 1, "noise-free": 0, "noise-aware": 1, "noise-cancelling": 2}
    noise_shown: set[tuple[str, str]] = set()
    for (mech, cal, reading, attacker), c in sorted(grid.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]],
                                                                                 order[kv[0][3]])):
        name = (f"{mech}, {'paper (not DP)' if cal == 'paper' else 'correct'}"
                + (", one noise per batch (not DP)" if reading == "per-batch" else "")
                + {"noise-aware": ", noise-aware attacker",
                   "noise-cancelling": ", noise-cancelling attacker"}.get(attacker, ""))
        rows.append([f"{name}: lenient / strict %", "-",
                     *[f"{c[e][0]:.0f} / {c[e][1]:.0f}" if e in c and c[e][1] is not None else
                       (f"{c[e][0]:.0f}" if e in c else "-") for e in eps]])
        if cal == "paper" and reading == "per-encoding":
            rows.append([f"{name}: accounted epsilon", "-", *[f"{c[e][2]:.3g}" if e in c else "-" for e in eps]])
        if (reading, attacker) != ("per-encoding", "noise-free"):  # beyond Figure 2: what the pair network learnt
            rows.append([f"{name}: pair network accuracy, held-out / real release %", "-",
                         *[f"{100 * c[e][4]:.0f} / {100 * c[e][5]:.0f}" if e in c and None not in c[e][4:6] else "-"
                           for e in eps]])
        if attacker == "noise-cancelling":
            rows.append([f"{name}: groups of shared noise found", "-", *[c[e][6] if e in c else "-" for e in eps]])
        if c and all(p[3] is not None for p in c.values()) and (mech, cal) not in noise_shown:  # once per mechanism
            noise_shown.add((mech, cal))
            what = "noise sigma" if mech == "gaussian" else "noise scale b"
            rows.append([f"{mech}, {'paper (not DP)' if cal == 'paper' else 'correct'}: {what} per coordinate", "-",
                         *[f"{c[e][3]:.3g}" if e in c else "-" for e in eps]])
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


NOISE_NOTE = (" Beyond the paper, where a row says so: a noise-aware attacker trains its pair network on simulated "
              "releases with the release's public mechanism and its own noise (the other rows' attacker trains on "
              "noise-free simulated releases); one noise per batch (not DP) is Algorithm 1 as printed, one noise "
              "vector per pass over the 100 examples added to all its encodings, with the correct calibration's sigma "
              "(which guarantees nothing there). A noise-cancelling attacker groups such a release by its shared noise "
              "(cosine similarity) and subtracts each group's mean, adding back the mean clipped auxiliary "
              "representation, in the attacked and in its simulated releases alike, so that the noise cancels "
              "before the attack (groups found: one per batch means every batch was found). Pair network accuracy: balanced accuracy on \"share an original?\" on "
              "a fresh release the attacker simulates as it simulated its training releases (held-out: noise-free for "
              "the noise-free attacker) and on the attacked release (auditor side); 50 % is chance.")


def _note(data: dict) -> str:
    beyond = any(key[2:] != ("per-encoding", "noise-free") for _, grid in data.values() for key in grid)
    return NOTE + _claims() + (NOISE_NOTE if beyond else "")


@section("dp_attack", "DP instance encoding: reconstruction attack against epsilon (Xie & Hong 2022, Figure 2)",
         order=61, kinds=("attack",))
def dp_attack(records: list[dict]) -> Content | None:
    data = _figure2(records)
    if not data:
        return None
    return [html_only(Para(_note(data))),
            *[(either(Heading(3, task), Para(f"{task}:")), Table(*_rows(task, *v))) for task, v in data.items()],
            markdown_only(Para(_note(data)))]


AUDIT_HEAD = ["mechanism", "case", "claimed epsilon", "accounted epsilon", "delta", "eps_lb (95 %)", "draws",
              "largest certifiable epsilon", "verdict"]


def _audit_label(name: str) -> str:
    """``dp-gaussian-paper`` -> ``gaussian, paper (not DP)``; ``dp-gaussian-correct-per-batch`` (a check of the noise
    reading) -> ``gaussian, correct, one noise per batch (not DP)``; other mechanisms (d_chi) keep their name."""
    parts = name.split("-", 3)
    if len(parts) >= 3 and parts[0] == "dp":
        label = f"{parts[1]}, {'paper (not DP)' if parts[2] == 'paper' else parts[2]}"
        if len(parts) == 4:
            label += {"per-batch": ", one noise per batch (not DP)", "per-encoding": ", fresh noise per encoding"}.get(
                parts[3], f", {parts[3]}")
        return label
    return name


def _audit_rows(records: list[dict]) -> list[list[object]]:
    """One row per audited claim of the empirical DP audits (records of kind "dp-audit"); DP instance encoding's
    claims sorted by mechanism, calibration, claim and case."""
    rows = []
    for i, r in enumerate(records):
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


READING_NOTE = ("Rows that name a noise reading check Algorithm 1's draw instead: one trial is one batch of two "
                "examples (k = 1, no mask, correct calibration for one encoding each), neighbouring batches differ in "
                "the first example (at the clipping boundary), and the statistic is the difference of the batch's two "
                "encodings, in which a noise vector drawn once per batch cancels. A per-batch row at the largest "
                "certifiable epsilon means the two batches were told apart without a single error: more draws would "
                "raise the bound without limit. No accounted epsilon: that reading has none.")


def _has_readings(records: list[dict]) -> bool:
    return any(any((a.get("details") or {}).get("noise_reading") for a in r["results"]) for r in records)


@section("dp_audit", "Empirical DP audits: a lower bound on epsilon beside the claim", order=52, kinds=("dp-audit",))
def dp_audit(records: list[dict]) -> Content | None:
    rows = _audit_rows(records)
    if not rows:
        return None
    dp = any(a["mechanism"].startswith("dp-") for r in records for a in r["results"])
    return [Table(AUDIT_HEAD, rows), markdown_only(Para(AUDIT_NOTE) if dp else None),
            Para(READING_NOTE) if _has_readings(records) else None]
