"""A data owner's privacy ledger: every release of a dataset, composed per example, against an owner-set budget.

The ledger is one SQLite file the owner keeps beside the key (mode 0600; storage, schema and validation in
:mod:`privnlu.schemes.ledger_store`). ``privnlu encode``, ``privnlu dp encode``, ``privnlu dchi privatize`` and
``privnlu train`` take ``--ledger FILE``. A release (:func:`release_of`, under any registered scheme) is checked
against the budget and recorded as *pending* in one transaction before any work (:meth:`Ledger.begin`: refused
with one line, nothing written, if it would exceed the budget; concurrent releases are serialised, so two that the
budget fits only one at a time cannot both pass), and marked *committed* once its output is written
(:meth:`Pending.commit`). Pending releases count against the budget; one left by a crash is listed by
``privnlu ledger FILE`` and settled with ``--resolve ID`` (:meth:`Ledger.resolve`). A release records

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
part in compose: the DP events (:mod:`privnlu.accounting`, each release's
:meth:`~.base.Scheme.dp_event` in its JSON form) by the PLD accountant (``ComposedDpEvent``), the
d_chi releases additively (``k`` releases at ``eta_1..eta_k`` of the same example
are ``(sum eta_i)``-d_chi for the same metric). A dataset's figure is the worst
example's. A release with no formal guarantee makes the example's guarantee
"none": under a budget it is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import accounting
from ..accounting import event_from_json
from ..errors import PrivnluError, require
from ..params import check_privacy_params
from . import ledger_store as store
from .base import NO_GUARANTEE, Scheme

FORMAT = store.FORMAT
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
    """The ledger's record of a release under ``scheme``: a DP release with the scheme's DP event
    (:meth:`~.base.Scheme.dp_event`) from its :class:`~privnlu.mechanisms.dp.Calibration` (``calibration``; DP-SGD:
    its :class:`~privnlu.training.dp_sgd.DPSGDResult` JSON), a d_chi release from its eta over ``model``'s embedding
    space, any other scheme as one with no formal guarantee."""
    return Release(command, dataset_name, output=output, **scheme.ledger_entry(calibration=calibration, model=model))


def _event(ev: dict):
    """The dp-accounting event of a recorded one (:func:`privnlu.accounting.event_from_json`): ``count``
    compositions of a Gaussian or Laplace mechanism, or of a Poisson-subsampled Gaussian (DP-SGD's step, sampling
    rate ``sample_rate``)."""
    return event_from_json(ev)


def compose_events(events: list[dict], delta: float) -> float:
    """Epsilon at ``delta`` of the composition of the recorded events (PLD accountant, RDP fallback)."""
    if not events:
        return 0.0
    return accounting.epsilon(accounting.compose([_event(e) for e in events]), delta, "pld", interval=1e-3)


class Ledger:
    """The ledger file (see the module docstring). ``Ledger.open(path)`` reads and validates it; a missing one is
    empty, and created by the first release or budget written into it."""

    def __init__(self, path: str | Path, data: dict) -> None:
        self.path = Path(path)
        self.data = data

    @classmethod
    def open(cls, path: str | Path) -> "Ledger":
        p = Path(path)
        return cls(p, store.load(p))

    def save(self) -> None:
        """Write the budget (:meth:`set_budget` writes it already; releases are written as they happen)."""
        with store.transaction(self.path) as (con, data):
            store.save_budget(con, self.data["budget"])
        self.data = {**data, "budget": self.data["budget"]}

    def pending(self) -> list[dict]:
        """The releases recorded as pending: begun, not yet committed (they count against the budget)."""
        return [r for r in self.data["releases"] if r["status"] == "pending"]

    # -- budget ----------------------------------------------------------
    @property
    def budget(self) -> dict | None:
        return self.data.get("budget")

    def set_budget(self, *, epsilon: float | None, delta: float | None, eta: float | None) -> None:
        """Set and write the owner's budget per example: (epsilon, delta) for DP releases, a total eta for d_chi
        releases (an omitted one keeps its earlier value)."""
        if epsilon is not None:
            check_privacy_params(epsilon, DEFAULT_DELTA if delta is None else delta)
        if eta is not None:
            require(math.isfinite(eta) and eta > 0, f"the eta budget must be > 0, not {eta}")
        old = self.budget or {}
        self.data["budget"] = {"epsilon": epsilon if epsilon is not None else old.get("epsilon"),
                               "delta": delta if delta is not None else old.get("delta", DEFAULT_DELTA),
                               "eta": eta if eta is not None else old.get("eta")}
        self.save()

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
        n = len(self.pending())
        pending = f", {n} of them pending (privnlu ledger {self.path} lists them)" if n else ""
        if release.guarantee == "dp" and mine["epsilon"] > b["epsilon"] * (1 + 1e-9):
            raise PrivnluError(f"refused: this release would bring examples of {release.dataset_name} to epsilon = "
                               f"{mine['epsilon']:.4g} (delta = {b['delta']:g}) over all their releases{pending}, "
                               f"above {where} (epsilon = {b['epsilon']:g}); nothing was written")
        if release.guarantee == "metric-dp" and mine["eta"] > b["eta"] * (1 + 1e-9):
            raise PrivnluError(f"refused: this release would bring examples of {release.dataset_name} to eta = "
                               f"{mine['eta']:.4g} over all their d_chi releases{pending}, above {where} (eta = "
                               f"{b['eta']:g}); nothing was written")

    def _row(self, release: Release, hashes: list[str], status: str) -> dict:
        require(len(hashes) > 0, f"{release.dataset_name}: no example to release")
        text = {k: store.CONTROL.sub(" ", getattr(release, k))
                for k in ("command", "dataset_name", "mechanism", "meaning")}
        return {**release.to_json(), **text, "status": status, "dataset": fingerprint(hashes),
                "n_examples": len(hashes),
                "output": store.relative_output(release.output, self.path.parent), "output_sha256": None,
                "prior_sha256": None, "writer": os.getpid() if status == "pending" else None,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def begin(self, release: Release, hashes: list[str]) -> "Pending":
        """Check the release against the budget and record it as pending, in one transaction (``BEGIN
        IMMEDIATE``): of concurrent releases that the budget fits only one at a time, one is recorded and the
        others are refused. Call before any work; :meth:`Pending.commit` once its output is written."""
        target = Path(release.output)
        prior = store.output_fingerprint(target)
        with store.transaction(self.path) as (con, data):
            self.data = data
            self.check(release, hashes)
            rid = store.insert_release(con, {**self._row(release, hashes, "pending"), "prior_sha256": prior}, hashes,
                                       self.path)
        self.data = store.load(self.path)
        return Pending(self, rid, release, hashes, target, prior)

    def record(self, release: Release, hashes: list[str]) -> int:
        """Check and record, in one transaction, a release whose output is already written; returns its id."""
        with store.transaction(self.path) as (con, data):
            self.data = data
            self.check(release, hashes)
            row = {**self._row(release, hashes, "committed"),
                   "output_sha256": store.output_fingerprint(Path(release.output))}
            rid = store.insert_release(con, row, hashes, self.path)
        self.data = store.load(self.path)
        return rid

    def resolve(self, rid: int, *, drop: bool = False) -> str:
        """Settle the pending release ``rid`` left by a crash: committed if its output is there as the release left
        it (the fingerprint noted before it was moved into place; with none noted, an output that differs from what
        was there before), else dropped; ``drop``: dropped regardless (the owner knows it was never handed out).
        Refused while the process that began it still runs. Returns "committed" or "dropped"."""
        with store.transaction(self.path, create=False) as (con, data):
            r = next((r for r in data["releases"] if r["id"] == rid), None)
            require(r is not None, f"ledger {self.path}: no release {rid}")
            require(r["status"] == "pending", f"ledger {self.path}: release {rid} is committed, not pending")
            if r["writer"] is not None and r["writer"] != os.getpid() and _alive(r["writer"]):
                raise PrivnluError(f"ledger {self.path}: release {rid} is being written by process {r['writer']}; "
                                   "wait for it to end (or stop it), then try again")
            target = self.path.parent / r["output"]
            keep = not drop and was_written(target, r["output_sha256"], r["prior_sha256"])
            if keep:
                con.execute("UPDATE releases SET status = 'committed', writer = NULL, output_sha256 = ? WHERE id = ?",
                            (store.output_fingerprint(target), rid))
            else:
                con.execute("DELETE FROM releases WHERE id = ?", (rid,))
        self.data = store.load(self.path)
        return "committed" if keep else "dropped"


    def table(self, name: str | Path | None = None) -> list[str]:
        """The releases as a table (pending ones marked), the budget, and how to settle pending ones."""
        def guarantee(r: dict) -> str:
            if r["guarantee"] == "dp":
                return f"epsilon {r['epsilon']:.4g} (delta {r['delta']:g})"
            return f"eta {r['eta']:g} (d_chi)" if r["guarantee"] == "metric-dp" else "none"

        rows = [("ID", "STATUS", "TIME", "COMMAND", "DATASET", "EXAMPLES", "GUARANTEE", "OUTPUT")]
        rows += [(str(r["id"]), "PENDING" if r["status"] == "pending" else r["status"], r["time"], r["command"],
                  r["dataset_name"], str(r["n_examples"]), guarantee(r), r["output"]) for r in self.data["releases"]]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        b = self.budget or {}
        parts = [f"epsilon {b['epsilon']:g} (delta {b['delta']:g})" if b.get("epsilon") is not None else "",
                 f"eta {b['eta']:g}" if b.get("eta") is not None else ""]
        lines.append(f"budget per example: {', '.join(x for x in parts if x) or 'none'}")
        pending = [str(r["id"]) for r in self.pending()]
        if pending:
            lines.append(f"{len(pending)} pending (ids {', '.join(pending)}): counted against the budget until "
                         f"settled with privnlu ledger {name or self.path} --resolve ID")
        return lines

def was_written(target: Path, noted: str | None, prior: str | None) -> bool:
    """Whether a pending release's output is at ``target``: its fingerprint is the one noted before the output was
    moved into place or, with none noted, differs from the one found there when the release began."""
    fp = store.output_fingerprint(target)
    return fp is not None and (fp == noted if noted is not None else fp != prior)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Pending:
    """A release recorded as pending (:meth:`Ledger.begin`): it counts against the budget until committed (output
    written) or aborted (nothing written). As a context manager, an exception in its body aborts it."""

    def __init__(self, ledger: Ledger, rid: int, release: Release, hashes: list[str], target: Path,
                 prior: str | None) -> None:
        self.ledger, self.id, self.release, self.hashes = ledger, rid, release, hashes
        self.target, self.prior = target, prior
        self.noted: str | None = None
        self.done = False

    def __enter__(self) -> "Pending":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if exc is not None and not self.done:
            with contextlib.suppress(Exception):  # the body's error is the one to report; a crash here is resolvable
                self.abort()

    def note(self, staged: str | Path) -> None:
        """Note the output's fingerprint as staged (a temporary file or folder), before it is moved into place."""
        self.noted = store.output_fingerprint(Path(staged))
        with store.transaction(self.ledger.path, create=False, full=False) as (con, _):
            con.execute("UPDATE releases SET output_sha256 = ? WHERE id = ? AND status = 'pending'",
                        (self.noted, self.id))

    def commit(self, release: Release | None = None) -> None:
        """Mark the release committed, its output written (``release``: its final record, e.g. DP-SGD's accounted
        guarantee). A pending record removed meanwhile is recorded again: the release was made."""
        rel = release if release is not None else self.release
        row = {**self.ledger._row(rel, self.hashes, "committed"), "id": self.id, "prior_sha256": self.prior,
               "output": store.relative_output(self.release.output, self.ledger.path.parent),
               "output_sha256": store.output_fingerprint(self.target)}
        with store.transaction(self.ledger.path, full=False) as (con, _):
            con.execute("DELETE FROM releases WHERE id = ? AND status = 'pending'", (self.id,))
            if con.execute("SELECT 1 FROM releases WHERE id = ?", (self.id,)).fetchone() is None:  # not resolved
                store.insert_release(con, row, self.hashes, self.ledger.path)
        self.done = True
        self.ledger.data = store.load(self.ledger.path)

    def abort(self) -> None:
        """The release failed: drop its record, unless its output was written after all (then commit it)."""
        if was_written(self.target, self.noted, self.prior):
            self.commit()
            return
        with store.transaction(self.ledger.path, create=False, full=False) as (con, _):
            con.execute("DELETE FROM releases WHERE id = ? AND status = 'pending'", (self.id,))
        self.done = True
        self.ledger.data = store.load(self.ledger.path)


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
    pending = ledger.pending()
    rec = {"kind": "dp-ledger", "privnlu": __version__, "ledger": str(path), "budget": ledger.budget,
           "releases": len(ledger.data["releases"]), "pending": len(pending), "datasets": datasets}
    lines = []
    for d in datasets:
        parts = [f"epsilon {d['epsilon']:.4g} (delta {d['delta']:g})" if d["epsilon"] is not None else None,
                 f"eta {d['eta']:g} (d_chi)" if d["eta"] is not None else None]
        text = ", ".join(p for p in parts if p) or "no DP or d_chi release"
        flag = (f"; {d['releases_without_formal_guarantee']} release(s) with no formal guarantee"
                if d["releases_without_formal_guarantee"] else "")
        lines.append(f"{', '.join(d['names'])}: {d['releases_of_this_dataset']} release(s); worst example: {text}{flag}")
    if pending:
        lines.append(f"{len(pending)} pending release(s) (ids {', '.join(str(r['id']) for r in pending)}) count "
                     f"against the budget: see privnlu ledger {path}")
    return rec, lines
