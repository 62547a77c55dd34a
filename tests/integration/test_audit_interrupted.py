"""Stress: an audit interrupted three times at random stages and resumed gives the same points as one that ran
without a stop (same data, same seed). A point must not depend on what the process computed before it."""

from __future__ import annotations

import json
import random

from test_audit_reliability import _files

#: the stops are drawn with this seed among every stage call of the uninterrupted run
SEED = 20261128
#: fields that say when and how long, not what
VOLATILE = {"seconds", "attack_seconds", "privnlu"}


def _args(tmp_path, tiny_model, cache_dir, train, dev, out, *extra):
    return ["audit", "--task", "mine", "--train-file", str(train), "--dev-file", str(dev), "--model", str(tiny_model),
            "--schemes", "none,dp-ie,dp-sgd", "--dp-epsilons", "8", "--dp-sgd-epsilons", "8",
            "--private", "8", "--distractors", "60", "--aux-size", "20",
            "--public-size", "40", "--epochs", "1", "--mi-references", "2", "--cache-dir", str(cache_dir),
            "--out", str(out), "--seed", "0", "--quiet", "--no-report", *extra]


def _points(out) -> dict[str, dict]:
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return {p.stem: clean(json.loads(p.read_text())) for p in sorted((out / "points").glob("*.json"))}


def test_an_audit_interrupted_three_times_gives_the_points_of_one_that_ran_through(
        tiny_model, cache_dir, tmp_path, monkeypatch, capsys):
    import privnlu.audit.run as run_mod
    from privnlu.cli.main import main

    train, dev = _files(tmp_path, n_train=120, n_dev=40)
    calls = {"n": 0, "stop_at": set(), "starts": []}
    real_point = run_mod.run_point

    def point(*a, **k):
        calls["starts"].append(calls["n"] + 1)  # the index of the point's first stage call
        return real_point(*a, **k)

    monkeypatch.setattr(run_mod, "run_point", point)
    for name in ("_train", "membership_threat", "calibrated_eta"):
        real = getattr(run_mod, name)

        def staged(*a, _real=real, **k):
            calls["n"] += 1
            if calls["n"] in calls["stop_at"]:
                raise KeyboardInterrupt
            return _real(*a, **k)

        monkeypatch.setattr(run_mod, name, staged)

    through = tmp_path / "through"
    assert main(_args(tmp_path, tiny_model, cache_dir / "through", train, dev, through)) == 0
    first, second, third = calls["starts"]
    per_point = [second - first, third - second]
    assert min(per_point) >= 2  # each point trains, then attacks its model

    # three stops: in a point's first stage, in the middle of a point, in the last point's first stage, so that
    # points start in a fresh process, after an interrupted one, and mid-way (counts restart with each run)
    rng = random.Random(SEED)
    stops = [second, 1 + rng.randrange(1, per_point[1]), third - second + 1]
    stopped = tmp_path / "stopped"
    codes = []
    for attempt, stop in enumerate([*stops, None]):
        calls["n"], calls["stop_at"] = 0, {stop}
        codes.append(main(_args(tmp_path, tiny_model, cache_dir / "stopped", train, dev, stopped,
                                *(["--resume"] if attempt else []))))
    capsys.readouterr()
    assert codes == [130, 130, 130, 0], codes
    want, got = _points(through), _points(stopped)
    assert len(want) == 3 and sorted(got) == sorted(want)
    for name in want:
        for key in want[name]:
            assert got[name][key] == want[name][key], (name, key)
