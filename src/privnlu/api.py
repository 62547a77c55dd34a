"""One entry per role: ``release`` (data owner), ``train`` (model builder), ``attack`` and ``audit`` (auditor),
``predict`` (whoever holds the trained model). Each takes a scheme by its registry name (:mod:`privnlu.schemes`)
with the scheme's parameters as keywords, and the same settings the command line offers.

>>> import privnlu
>>> rec = privnlu.train("tweets", scheme="texthide", m=256, k=4, epochs=5)          # doctest: +SKIP
>>> privnlu.release("tweets", scheme="dp-ie", epsilon=8, out="enc.safetensors", key_out="key.pt")  # doctest: +SKIP
>>> privnlu.attack("search", payload="enc.safetensors")                              # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Sequence

from .errors import PrivnluError, require


def _split(scheme: Any, options: dict[str, Any]):
    """(scheme object, RunSpec fields, TrainConfig fields) from a scheme (name or object) and keyword options;
    an option no part takes is refused."""
    from .schemes import Scheme, create, get
    from .training import TrainConfig
    from .training.engine import RunSpec

    if not isinstance(scheme, Scheme):
        params = {o.dest for o in get(scheme).options()}
        scheme = create(scheme, **{k: options.pop(k) for k in list(options) if k in params})
    spec_fields = {f.name for f in fields(RunSpec)} - {"scheme", "train", "task"}
    train_fields = {f.name for f in fields(TrainConfig)}
    spec = {k: options.pop(k) for k in list(options) if k in spec_fields}
    train = {k: options.pop(k) for k in list(options) if k in train_fields}
    if options:
        raise PrivnluError(f"unknown option(s) {', '.join(sorted(options))} for scheme {scheme.name}")
    return scheme, spec, TrainConfig(**train)


def train(task: str, scheme: Any = "none", *, out: str | Path | None = None, progress: bool = True,
          **options: Any) -> dict:
    """Train a model on ``task`` under ``scheme`` (a registry name with its parameters as keywords, e.g. ``m=256,
    k=4``, or a scheme object) and return the results record. With ``out``, the run folder gets the record, the key
    and the model with its card (``privnlu train``). Other keywords: the run's settings (``mode``, ``model``,
    ``train_limit``, ...) and training settings (``epochs``, ``lr``, ``batch_size``, ``seed``, ...)."""
    from .training.engine import RunSpec, prepare, train as train_into, train_run

    s, spec_fields, cfg = _split(scheme, options)
    spec = RunSpec(task=task, scheme=s, train=cfg, **spec_fields)
    if out is not None:
        return train_into(spec, out, progress=progress)
    return train_run(spec, prepare(spec, progress=progress), progress=progress)


def release(task: str, scheme: Any = "texthide", *, out: str | Path, key_out: str | Path, split: str = "train",
            encodings: int = 1, ledger: str | Path | None = None, progress: bool = True, **options: Any):
    """Encode ``split`` of ``task`` under a per-batch scheme into a shared file ``out`` (encodings and mixed labels)
    and a key file ``key_out`` (0600), ``encodings`` times per example; with ``ledger``, checked against the
    owner's budget first and recorded. Returns the shared payload. ``seed`` (EXPERIMENTS ONLY) is a keyword too."""
    from .training.engine import RunSpec
    from .owner.release import release_split

    seed = options.pop("seed", None)
    batch_size = options.pop("batch_size", 64)
    s, spec_fields, _ = _split(scheme, options)
    return release_split(RunSpec(task=task, scheme=s, **spec_fields), split, out, key_out, encodings=encodings,
                         batch_size=batch_size, seed=seed, ledger=ledger, progress=progress)


def attack(kind: str, *, task: str | None = None, payload: str | Path | None = None,
           conditions: str = "baseline,mix-only,texthide,random", queries: int = 100, seed: int | None = None,
           model: str | None = None, pooling: str = "auto", **knobs: Any) -> dict:
    """Run an attack and return its record: ``kind`` is ``search``, ``invert`` or ``reconstruct`` (the attack
    registry's commands, :mod:`privnlu.attacks.registry`), on a task's releases under ``conditions``
    (``baseline``, ``mix-only``, ``texthide``, ``random`` or ``M:K``), or on a shared file (``payload``, only search and reconstruct: the attack reads no key, so the record holds the
    attacker's answers; the owner's ``key=``, read only once the attack has answered, scores them: ``owner_score``
    with the share of private sentences recovered, its interval, chance line and advantage over chance).
    ``knobs``: the attack's own settings (see ``privnlu attack KIND --help``)."""
    from .attacks import registry, runs

    entry = registry.by_kind(kind, payload=payload is not None)
    t = runs.Target(task=task, model=model, pooling=pooling, queries=queries, seed=seed)
    if payload is not None:
        if knobs.get("key") is not None:
            from .audit.leakage import on_scale

            knobs.setdefault("scale", on_scale)
        return entry.payload_runner()(t, payload, **knobs)
    return entry.task_runner()(t, conditions, seed=seed, **knobs)


def audit(task: str, *, schemes: Sequence[str] | None = None, out: str | Path = "runs/audit", report: bool = True,
          progress: bool = True, force: bool = False, **settings: Any) -> list[dict]:
    """Every scheme of the registry (or ``schemes``) on ``task``: utility against leakage (advantage over chance), one
    record per point under ``out/points`` (a rerun keeps finished points and refuses points made with other
    settings; ``force`` replaces them), the flat table ``out/points.csv``, and the HTML report in ``out/report``.
    Returns the table's rows, one flat dict per point (``pandas.DataFrame(rows)`` takes them as they are; the full
    records are the JSON files). ``settings``: :class:`privnlu.audit.AuditSettings` fields (``train_limit``,
    ``n_private``, ``dp_epsilons``, ...)."""
    from .audit import AuditSettings
    from .audit.run import run_audit

    require(schemes is None or len(schemes) > 0, "schemes=[] names no scheme: leave it out to audit every scheme")
    s = AuditSettings(task=task, **({"schemes": tuple(schemes)} if schemes else {}), **settings)
    records = run_audit(s, out, resume=not force, force=force, progress=progress)
    if report:
        from .report import build_report

        build_report([Path(out) / "points"], Path(out) / "report", title=f"privnlu audit: {task}")
    from .audit.table import point_rows

    return point_rows(records)


def predict(run: str | Path, texts: Sequence[str], pairs: Sequence[str] | None = None, *,
            key: str | Path | None = None, samples: int | None = None) -> list[dict]:
    """Apply a trained run (its folder, or its ``model/`` folder) to ``texts``: one dict per text with the
    prediction and its probability; queries are encoded as the run's evaluation encoded them (``key``: the
    owner's key where the scheme needs one; default the run folder's). The answer is deterministic; ``samples=N``
    averages ``N`` fresh random encodings instead (``N = 1``: the paper's stochastic inference).

    ``privnlu.predict.load(run, key=...)`` returns the loaded model to call many times
    (:func:`privnlu.model_folder.predict.load`)."""
    return _load(run, key=key, samples=samples).predict(list(texts), list(pairs) if pairs is not None else None)


def _load(run: str | Path, **kw):
    """:func:`privnlu.model_folder.predict.load`, imported on first use (``import privnlu`` stays light)."""
    from .model_folder.predict import load

    return load(run, **kw)


_load.__name__ = _load.__qualname__ = "load"
#: ``privnlu.predict.load``: the name a saved model's ``config.json`` points transformers users to
predict.load = _load  # type: ignore[attr-defined]


__all__ = ["attack", "audit", "predict", "release", "train"]
