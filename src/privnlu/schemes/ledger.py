"""A data owner's privacy ledger: every release of a dataset, composed per example, against an owner-set budget.

The ledger is a JSON file the owner keeps beside the key (mode 0600, written
atomically). ``privnlu encode``, ``privnlu dp encode``, ``privnlu dchi privatize`` and ``privnlu train``
take ``--ledger FILE``; :func:`release_of` records a release under any registered scheme: before any work the release is checked against the
budget (refused with one line, nothing written, if it would exceed it), and once
its files are written it is recorded with

* the dataset: a fingerprint, and a short hash of every example (text and label),
  so that releases of overlapping subsets compose for the examples they share;
* the mechanism and its per-example guarantee:

  - DP instance encoding: the per-example ``(epsilon, delta)`` of the release and
    its ``dp-accounting`` events (``participations`` compositions of a Gaussian or
    Laplace mechanism with noise multiplier ``noise / true sensitivity``; for the
    paper's calibration, the epsilon the release really has);
  - DP-SGD (``privnlu train --scheme dp-sgd --ledger FILE``): the trained model's ``(epsilon, delta)`` and its
    ``steps`` compositions of a Poisson-subsampled Gaussian (``PoissonSampledDpEvent``); a model trained under
    another scheme and recorded is a release with no formal guarantee;
  - d_chi (Qu et al. 2021): ``eta`` and its metric-DP meaning,
    ``P(M(x) in S) <= exp(eta d(x, x')) P(M(x') in S)``;
  - TextHide: "no formal guarantee".

Composition (:meth:`Ledger.compose`). For every example, the releases it took
part in compose: the DP events by the PLD accountant (``ComposedDpEvent``), the
d_chi releases additively (``k`` releases at ``eta_1..eta_k`` of the same example
are ``(sum eta_i)``-d_chi for the same metric). A dataset's figure is the worst
example's. A release with no formal guarantee makes the example's guarantee
"none": under a budget it is refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PrivnluError, require
from ..io import SECRET_MODE, write_json_atomic
from ..params import check_privacy_params
from .base import Scheme

FORMAT = "privnlu-ledger"
NO_GUARANTEE = "no formal guarantee"
DEFAULT_DELTA = 1e-5


def example_hash(text_a: str, text_b: str | None, label: object) -> str:
    """A short (64-bit) hash of one example, its identity in the ledger."""
    h = hashlib.sha256(text_a.encode() + b"\x1f" + (text_b or "").encode() + b"\x1e" + repr(label).encode())
    return h.hexdigest()[:16]


def dataset_hashes(ds) -> list[str]:
    """Per-example hashes of a :class:`~privnlu.data.TextDataset`."""
    return [example_hash(ds.texts_a[i], ds.texts_b[i] if ds.texts_b is not None else None, ds.labels[i])
            for i in range(len(ds))]


def lines_hashes(path: str | Path) -> list[str]:
    """Per-line hashes of a text file (one example per line, no label), as ``privnlu dchi privatize`` reads it."""
    with open(path, encoding="utf-8") as fh:
        return [example_hash(line.rstrip("\n"), None, None) for line in fh]


def fingerprint(hashes: list[str]) -> str:
    """The dataset's fingerprint: sha256 over its example hashes, in order."""
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


@dataclass
class Release:
    """One release, as the ledger records it (see the module docstring)."""

    command: str
    dataset_name: str
    guarantee: str  # "dp", "metric-dp" (d_chi) or "none": the scheme's kind of formal guarantee
    mechanism: str
    epsilon: float | None = None
    delta: float | None = None
    events: list[dict] = field(default_factory=list)  # {"kind": gaussian|laplace, "noise_multiplier", "count"}
    eta: float | None = None
    meaning: str = ""
    output: str = ""

    def to_json(self) -> dict:
        return dict(self.__dict__)


def release_of(scheme: Scheme, command: str, dataset_name: str, output: str, *, calibration: Any = None,
               model: str = "the encoder") -> Release:
    """The ledger's record of a release under ``scheme``: a DP release from its
    :class:`~privnlu.mechanisms.dp.Calibration` (``calibration``), a d_chi release from its eta over ``model``'s
    embedding space, any other scheme as one with no formal guarantee."""
    if scheme.formal == "dp" and scheme.release == "model":  # DP-SGD: the model, from its DPSGDResult JSON
        c = calibration
        return Release(command, dataset_name, "dp", scheme.name, c["epsilon"], c["delta"],
                       [{"kind": "poisson-gaussian", "noise_multiplier": c["noise_multiplier"],
                         "sample_rate": c["sample_rate"], "count": c["steps"]}],
                       meaning=f"({c['epsilon']:.4g}, {c['delta']:g})-DP per example for the trained model (DP-SGD, "
                               f"{c['steps']} Poisson-sampled steps at q = {c['sample_rate']:.4g}, noise multiplier "
                               f"{c['noise_multiplier']:.4g})", output=output)
    if scheme.formal == "dp":
        mech = calibration.mechanism
        label = calibration.to_json()["label"]
        return Release(command, dataset_name, "dp", f"{scheme.name}-{mech.kind}-{calibration.calibration}",
                       calibration.epsilon, calibration.delta,
                       [{"kind": mech.kind, "noise_multiplier": mech.noise_multiplier,
                         "count": calibration.participations}],
                       meaning=f"({calibration.epsilon:.4g}, {calibration.delta:g})-DP per example for the whole "
                               f"release ({label})", output=output)
    if scheme.formal == "metric-dp":
        g = scheme.guarantee(model=model)
        return Release(command, dataset_name, "metric-dp", scheme.name, eta=g.eta, output=output, meaning=g.text)
    return Release(command, dataset_name, "none", scheme.label, meaning=NO_GUARANTEE, output=output)


def _event(ev: dict):
    """The dp-accounting event of a recorded one: ``count`` compositions of a Gaussian or Laplace mechanism, or of a
    Poisson-subsampled Gaussian (DP-SGD's step, sampling rate ``sample_rate``)."""
    import dp_accounting

    kind = "gaussian" if ev["kind"] == "poisson-gaussian" else ev["kind"]
    base = (dp_accounting.GaussianDpEvent if kind == "gaussian" else dp_accounting.LaplaceDpEvent)(ev["noise_multiplier"])
    if ev["kind"] == "poisson-gaussian":
        base = dp_accounting.PoissonSampledDpEvent(float(ev["sample_rate"]), base)
    return dp_accounting.SelfComposedDpEvent(base, int(ev["count"]))


def compose_events(events: list[dict], delta: float) -> float:
    """Epsilon at ``delta`` of the composition of the recorded events (PLD accountant, RDP fallback)."""
    import dp_accounting

    from ..mechanisms.dp import pld_epsilon

    if not events:
        return 0.0
    scale = max((ev["noise_multiplier"] ** -2 if ev["kind"] != "laplace" else 1 / ev["noise_multiplier"]) for ev in events)
    return pld_epsilon(dp_accounting.ComposedDpEvent([_event(e) for e in events]), delta, loss_scale=scale, interval=1e-3)


class Ledger:
    """The ledger file (see the module docstring). ``Ledger.open(path)`` reads it, or starts an empty one."""

    def __init__(self, path: str | Path, data: dict) -> None:
        self.path = Path(path)
        self.data = data

    @classmethod
    def open(cls, path: str | Path) -> "Ledger":
        p = Path(path)
        if not p.exists():
            return cls(p, {"format": FORMAT, "version": 1, "budget": None, "datasets": {}, "releases": []})
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise PrivnluError(f"--ledger {p}: not a privnlu ledger (unreadable JSON)") from None
        require(isinstance(data, dict) and data.get("format") == FORMAT, f"--ledger {p}: not a privnlu ledger file")
        for r in data.get("releases", []):  # ledgers written before the scheme registry name d_chi's kind "dchi"
            if r.get("guarantee") == "dchi":
                r["guarantee"] = "metric-dp"
        return cls(p, data)

    def save(self) -> None:
        write_json_atomic(self.path, self.data, mode=SECRET_MODE)

    # -- budget ----------------------------------------------------------
    @property
    def budget(self) -> dict | None:
        return self.data.get("budget")

    def set_budget(self, *, epsilon: float | None, delta: float | None, eta: float | None) -> None:
        """The owner's budget per example: (epsilon, delta) for DP releases, a total eta for d_chi releases."""
        if epsilon is not None:
            check_privacy_params(epsilon, DEFAULT_DELTA if delta is None else delta)
        if eta is not None:
            require(math.isfinite(eta) and eta > 0, f"the eta budget must be > 0, not {eta}")
        old = self.budget or {}
        self.data["budget"] = {"epsilon": epsilon if epsilon is not None else old.get("epsilon"),
                               "delta": delta if delta is not None else old.get("delta", DEFAULT_DELTA),
                               "eta": eta if eta is not None else old.get("eta")}

    # -- composition -----------------------------------------------------
    def _groups(self, extra: tuple[Release, list[str]] | None = None) -> dict[str, list[tuple[int, ...]]]:
        """Per dataset fingerprint: the distinct sets of release indices its examples took part in."""
        releases = self.data["releases"]
        datasets = dict(self.data["datasets"])
        dsets = [r["dataset"] for r in releases]
        if extra is not None:
            fp = fingerprint(extra[1])
            datasets[fp] = extra[1]
            dsets.append(fp)
        per_example: dict[str, list[int]] = defaultdict(list)
        for i, fp in enumerate(dsets):
            for h in datasets[fp]:
                per_example[h].append(i)
        out: dict[str, list[tuple[int, ...]]] = {}
        for fp in set(dsets):
            out[fp] = sorted({tuple(per_example[h]) for h in datasets[fp]})
        return out

    def _compose_group(self, idx: tuple[int, ...], releases: list[dict], delta: float) -> dict:
        rs = [releases[i] for i in idx]
        none = [r for r in rs if r["guarantee"] == "none"]
        dp = [e for r in rs if r["guarantee"] == "dp" for e in r["events"]]
        etas = [r["eta"] for r in rs if r["guarantee"] == "metric-dp"]
        return {"releases": len(rs), "dp_releases": sum(r["guarantee"] == "dp" for r in rs),
                "epsilon": compose_events(dp, delta) if dp else None, "delta": delta if dp else None,
                "eta": sum(etas) if etas else None, "no_formal_guarantee": len(none)}

    def compose(self, *, delta: float | None = None, extra: tuple[Release, list[str]] | None = None) -> list[dict]:
        """Per dataset: the worst example's composed (epsilon at ``delta``), total eta, and releases without a
        guarantee, over every release recorded (plus ``extra``, a candidate release, if given)."""
        delta = delta if delta is not None else (self.budget or {}).get("delta") or DEFAULT_DELTA
        releases = [*self.data["releases"], *([{**extra[0].to_json(), "dataset": fingerprint(extra[1])}] if extra else [])]
        out = []
        for fp, groups in self._groups(extra).items():
            parts = [self._compose_group(g, releases, delta) for g in groups]
            worst = {"epsilon": max((p["epsilon"] for p in parts if p["epsilon"] is not None), default=None),
                     "eta": max((p["eta"] for p in parts if p["eta"] is not None), default=None),
                     "no_formal_guarantee": max(p["no_formal_guarantee"] for p in parts)}
            names = sorted({r["dataset_name"] for r in releases if r["dataset"] == fp})
            mine = [i for i, r in enumerate(releases) if r["dataset"] == fp]
            n_ex = len(extra[1]) if extra and fp == fingerprint(extra[1]) else len(self.data["datasets"][fp])
            out.append({"dataset": fp, "names": names, "n_examples": n_ex, "releases_of_this_dataset": len(mine),
                        "max_releases_per_example": max(p["releases"] for p in parts),
                        "epsilon": worst["epsilon"], "delta": delta if worst["epsilon"] is not None else None,
                        "eta": worst["eta"], "releases_without_formal_guarantee": worst["no_formal_guarantee"],
                        "guarantee": NO_GUARANTEE if worst["no_formal_guarantee"] else "per example, worst example"})
        return out

    # -- a new release ---------------------------------------------------
    def check(self, release: Release, hashes: list[str]) -> None:
        """Refuse (PrivnluError, one line) a release that would take any example over the owner's budget."""
        b = self.budget
        if not b:
            return
        where = f"the budget in {self.path}"
        if release.guarantee == "none":
            raise PrivnluError(f"refused: {release.mechanism} has {NO_GUARANTEE}, and {where} allows only releases "
                               "with one; nothing was written")
        if release.guarantee == "dp":
            require(b.get("epsilon") is not None, f"refused: {where} sets no epsilon for DP releases (set one with "
                    "privnlu dp account --ledger FILE --budget-epsilon E); nothing was written")
        if release.guarantee == "metric-dp":
            require(b.get("eta") is not None, f"refused: {where} sets no eta for d_chi releases (set one with "
                    "privnlu dp account --ledger FILE --budget-eta ETA); nothing was written")
        fp = fingerprint(hashes)
        mine = next(r for r in self.compose(delta=b.get("delta"), extra=(release, hashes)) if r["dataset"] == fp)
        if release.guarantee == "dp" and mine["epsilon"] > b["epsilon"] * (1 + 1e-9):
            raise PrivnluError(f"refused: this release would bring examples of {release.dataset_name} to epsilon = "
                               f"{mine['epsilon']:.4g} (delta = {b['delta']:g}) over all their releases, above {where} "
                               f"(epsilon = {b['epsilon']:g}); nothing was written")
        if release.guarantee == "metric-dp" and mine["eta"] > b["eta"] * (1 + 1e-9):
            raise PrivnluError(f"refused: this release would bring examples of {release.dataset_name} to eta = "
                               f"{mine['eta']:.4g} over all their d_chi releases, above {where} (eta = {b['eta']:g}); "
                               "nothing was written")

    def record(self, release: Release, hashes: list[str]) -> None:
        """Append the release (after its files are written) and save the ledger."""
        fp = fingerprint(hashes)
        self.data["datasets"].setdefault(fp, hashes)
        self.data["releases"].append({**release.to_json(), "dataset": fp, "n_examples": len(hashes),
                                      "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.save()


def account(path: str | Path, *, budget_epsilon: float | None = None, budget_delta: float | None = None,
            budget_eta: float | None = None, delta: float | None = None) -> tuple[dict, list[str]]:
    """``privnlu dp account --ledger``: set the budget (if one is given) and compose every recorded release per
    dataset. Returns the record (kind ``dp-ledger``) and one summary line per dataset."""
    from ..version import __version__

    budget = (budget_epsilon, budget_delta, budget_eta)
    require(Path(path).is_file() or any(b is not None for b in budget),
            f"--ledger {path}: no such ledger (releases record into it with --ledger; set a budget with "
            "--budget-epsilon)")
    ledger = Ledger.open(path)
    if any(b is not None for b in budget):
        ledger.set_budget(epsilon=budget_epsilon, delta=budget_delta, eta=budget_eta)
        ledger.save()
    b = ledger.budget or {}
    datasets = ledger.compose(delta=b.get("delta") or delta)
    rec = {"kind": "dp-ledger", "privnlu": __version__, "ledger": str(path), "budget": ledger.budget,
           "releases": len(ledger.data["releases"]), "datasets": datasets}
    lines = []
    for d in datasets:
        parts = [f"epsilon {d['epsilon']:.4g} (delta {d['delta']:g})" if d["epsilon"] is not None else None,
                 f"eta {d['eta']:g} (d_chi)" if d["eta"] is not None else None]
        text = ", ".join(p for p in parts if p) or "no DP or d_chi release"
        flag = (f"; {d['releases_without_formal_guarantee']} release(s) with no formal guarantee"
                if d["releases_without_formal_guarantee"] else "")
        lines.append(f"{', '.join(d['names'])}: {d['releases_of_this_dataset']} release(s); worst example: {text}{flag}")
    return rec, lines
