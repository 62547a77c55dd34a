"""Recipe: DP instance encoding (Xie & Hong 2022, "Differentially Private Instance Encoding against Privacy Attacks").

Figure 1 of the paper: task utility against epsilon for Laplace and Gaussian
DP instance encoding, beside plain TextHide (16, 4) and the no-privacy
baseline. Every point is one :func:`~privnlu.experiments.pipeline.train_run`
with ``scheme="dp"`` on shared cached features, under both calibrations:

* ``correct``: clip in the noise's norm, noise calibrated so that every example is
  (epsilon, delta)-DP over all ``k x epochs`` encodings it takes part in
  (:func:`privnlu.mechanisms.dp.calibrate`);
* ``paper``: the paper's per-encoding calibration (Laplace with ``2C/epsilon`` on
  L2-clipped vectors), **not a valid DP guarantee**; each record carries the
  epsilon the run really has.

Figure 2, the reconstruction attack (Xie & Hong 2021's pipeline,
:mod:`privnlu.experiments.xie2021`) against DP TextHide (16, 4) at every epsilon,
is :func:`figure2` (also ``privnlu attack reconstruct --dp-*``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..io import read_json
from ..mechanisms.dp import CALIBRATIONS, MECHANISMS, PAPER_EPSILONS, DPSettings
from ..training import TrainConfig
from .pipeline import RunSpec, prepare, train_run, with_scheme
from .xie2021 import run_release

FIGURE1_TASKS = ("sst2", "cola")
TEXTHIDE_POINT = (16, 4)  # the paper compares against TextHide (16, 4)
GROUP = "xie2022"
CLEAN_QUERY_EPSILONS = (1, 8, 20)
ATTACK_CONDITION = "16:4"
#: About 85 % reconstruction success against plain TextHide (quoted in issue 3); the curve is not available here.
PAPER_TEXTHIDE_ATTACK = 85


def figure1(out: Path, *, tasks: tuple[str, ...] = FIGURE1_TASKS, base: RunSpec | None = None,
            epsilons: tuple[float, ...] = PAPER_EPSILONS, mechanisms: tuple[str, ...] = MECHANISMS,
            calibrations: tuple[str, ...] = CALIBRATIONS, clip: float = 1.0, delta: float = 1e-5,
            noisy_queries: bool = True, progress: bool = True) -> list[dict]:
    """Baseline, TextHide (16, 4) and DP TextHide (16, 4) at every (mechanism, calibration, epsilon); resumable.

    A run whose results JSON already exists under ``out`` is read back, not retrained. ``noisy_queries=False``
    evaluates on noise-free (clipped, masked) dev queries: training-release privacy only.
    """
    m, k = TEXTHIDE_POINT
    records = []
    for task in tasks:
        spec0 = replace(base, task=task) if base else RunSpec(task=task, train=TrainConfig())
        specs = [with_scheme(spec0, m=0, k=1), with_scheme(spec0, m=m, k=k)]
        specs += [with_scheme(spec0, m=m, k=k, dp=DPSettings(mechanism=mech, epsilon=eps, delta=delta, clip=clip,
                                                             calibration=cal, noisy_queries=noisy_queries))
                  for mech in mechanisms for cal in calibrations for eps in epsilons]
        prep = None
        for spec in specs:
            path = out / f"{spec.label}.json"
            if path.exists():
                records.append(read_json(path))
                continue
            prep = prep or prepare(spec, progress=progress)
            rec = train_run(spec, prep, out=path, progress=False, group=GROUP)
            records.append(rec)
            if progress:
                print(f"  {spec.label:>60s}  {rec['metric']} {rec['score']:.2f}", flush=True)
    return records


def figure2(out: Path, *, tasks: tuple[str, ...] = ("cola",), base: RunSpec | None = None, progress: bool = True,
            epsilons: tuple[float, ...] = PAPER_EPSILONS, mechanisms: tuple[str, ...] = MECHANISMS,
            calibrations: tuple[str, ...] = CALIBRATIONS) -> list[dict]:
    """Figure 2: reconstruction-attack success on DP TextHide (16, 4) per (task, mechanism, calibration, epsilon)."""
    return [run_release(out, f"rec_{t}_dp_{mech}_{cal}_eps{eps:g}", t, (ATTACK_CONDITION,), base, progress,
                        DPSettings(mechanism=mech, epsilon=eps, calibration=cal))
            for t in tasks for mech in mechanisms for cal in calibrations for eps in epsilons]
