"""Recipe: DP instance encoding (Xie & Hong 2022, "Differentially Private Instance Encoding against Privacy Attacks").

Figure 1 of the paper: task utility against epsilon for Laplace and Gaussian DP instance encoding, beside plain
TextHide (16, 4) and the no-privacy baseline. The DP runs use the paper's scheme, Algorithm 1: clip, mix k = 4
with TextHide's coefficients, noise on each encoding and **no sign mask** (``m = 0``, ``dp-ie``); ``masked=True``
adds TextHide's (16, 4) masks (``dp-ie-masked``, the variant privnlu ran first). Two calibrations:

* ``correct``: noise calibrated so that every example is (epsilon, delta)-DP over all ``k x epochs`` encodings it
  takes part in (:func:`privnlu.mechanisms.dp.calibrate`);
* ``paper``: Theorems 3 and 4 per encoding (:func:`privnlu.mechanisms.dp.paper_mechanism`), **not a valid DP
  guarantee**; each record carries the epsilon the release really has.

Dev queries are clean (clipped, not noised) by default, as the paper evaluates the model on the private task;
``noisy_queries=True`` noises them too. CoLA is scored in accuracy, as the paper plots it, with MCC beside.
Modes: ``frozen`` (cached features) and ``joint`` (the encoder fine-tuned through the noise).

Figure 2: the reconstruction attack (Xie & Hong 2021's pipeline, :mod:`privnlu.experiments.xie2021`) against the
same mechanisms at every epsilon, on SST-2 and CoLA (:func:`figure2`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..io import read_json, write_json_atomic
from ..mechanisms.dp import CALIBRATIONS, MECHANISMS, PAPER_EPSILONS, DPSettings, scheme_name
from .huang2020 import Scale, base_spec, scale
from ..training.engine import RunSpec, train_run, with_scheme
from ..training.selection import majority
from ..training.selection import prepare_head as prepare
from .xie2021 import run_release

FIGURE1_TASKS = ("sst2", "cola")
TEXTHIDE_POINT = (16, 4)  # the paper compares against TextHide (16, 4)
DP_K = 4
GROUP = "xie2022"
PAPER_TEXTHIDE_ATTACK = 85  # "around 85%" (Section 5.3); see privnlu.paper_values.xie2022
ATTACK_CONDITION = "16:4"  # plain TextHide, the reference of Figure 2
FIGURE2_METHODS = ("nmf",)  # the strongest clustering; the paper's rule is in xie2021-table1


def dp_point(masked: bool) -> tuple[int, int]:
    """(m, k) of the DP runs: the paper's (0, 4), or TextHide's masks (16, 4)."""
    return (TEXTHIDE_POINT[0] if masked else 0, DP_K)


def _scores(rec: dict) -> dict:
    """Accuracy beside the task metric (CoLA: accuracy as the paper plots it, MCC as GLUE scores it)."""
    ev = next(iter(rec["eval"].values()))
    return {"accuracy": 100 * ev["accuracy"] if "accuracy" in ev else None}


def figure1(out: Path, *, tasks: tuple[str, ...] = FIGURE1_TASKS, base: RunSpec | None = None,
            epsilons: tuple[float, ...] = PAPER_EPSILONS, mechanisms: tuple[str, ...] = MECHANISMS,
            calibrations: tuple[str, ...] = CALIBRATIONS, clip: float = 1.0, delta: float = 1e-5,
            noisy_queries: bool = False, masked: bool = False, scale_name: str | Scale = "cpu", mode: str = "frozen",
            progress: bool = True) -> list[dict]:
    """Baseline, TextHide (16, 4) and DP-IE at every (mechanism, calibration, epsilon); resumable.

    A run whose results JSON already exists under ``out`` is read back, not retrained. Hyperparameters are the
    scale's first (no selection: the grid is already 8 x 2 x 2 runs per task; docs/decisions.md, issue 10).
    """
    sc: Scale = scale(scale_name)
    m, k = dp_point(masked)
    records = []
    for task in tasks:
        spec0 = base_spec(task, sc, mode=mode, base=base)
        spec0 = replace(spec0, encoder_lr=sc.encoder_lrs[0], train=replace(spec0.train, lr=sc.lrs[0]))
        specs = [spec0, with_scheme(spec0, m=TEXTHIDE_POINT[0], k=TEXTHIDE_POINT[1])]
        specs += [with_scheme(spec0, m=m, k=k, dp=DPSettings(mechanism=mech, epsilon=eps, delta=delta, clip=clip,
                                                             calibration=cal, noisy_queries=noisy_queries))
                  for mech in mechanisms for cal in calibrations for eps in epsilons]
        prep = None
        for spec in specs:
            path = out / f"{spec.label}-{mode}.json"
            done = read_json(path) if path.exists() else None
            if done is not None and "majority" in done:
                records.append(done)
                continue
            prep = prep or prepare(spec, progress=progress)
            # ``out=path``: an interrupted joint run resumes from its last epoch (a hidden checkpoint beside it);
            # a record without the fields below was written by train_run just before an interruption
            rec = done or train_run(spec, prep, out=path, progress=False, group=GROUP)
            rec.update({"scale": sc.name, "dp_scheme": scheme_name(spec.scheme.m) if spec.scheme.formal == "dp" else None, "majority": majority(prep),
                        **_scores(rec)})
            write_json_atomic(path, rec)
            records.append(rec)
            if progress:
                print(f"  {path.stem:>64s}  {rec['metric']} {rec['score']:.2f}", flush=True)
    return records


def figure2(out: Path, *, tasks: tuple[str, ...] = FIGURE1_TASKS, base: RunSpec | None = None, progress: bool = True,
            epsilons: tuple[float, ...] = PAPER_EPSILONS, mechanisms: tuple[str, ...] = MECHANISMS,
            calibrations: tuple[str, ...] = CALIBRATIONS, masked: bool = False,
            methods: tuple[str, ...] = FIGURE2_METHODS) -> list[dict]:
    """Figure 2: reconstruction-attack success per (task, mechanism, calibration, epsilon), on the DP-IE scheme
    (``m = 0``; ``masked``: TextHide's (16, 4) masks), plus plain TextHide (16, 4) per task. The attack is
    privnlu's strongest clustering (``nmf``) unless ``methods`` says otherwise: an auditor bounds leakage with the
    strongest attack, and the paper's own rule recovers far less even without noise (docs/results_attacks.md)."""
    m, k = dp_point(masked)
    cond = f"{m}:{k}"
    recs = [run_release(out, f"rec_{t}_texthide_m16_k4", t, (ATTACK_CONDITION,), base, progress, methods=methods)
            for t in tasks]
    recs += [run_release(out, f"rec_{t}_{scheme_name(m)}_{mech}_{cal}_eps{eps:g}", t, (cond,), base, progress,
                         DPSettings(mechanism=mech, epsilon=eps, calibration=cal), methods=methods)
             for t in tasks for mech in mechanisms for cal in calibrations for eps in epsilons]
    return recs
