"""Bad input and faults. Every bad input is one line and exit code 2, before any work starts, with no
traceback and no file left behind; stale, corrupt and incomplete results are handled; SIGTERM leaves no
temporary file; mechanisms refuse non-finite input and never show a key in a repr.

The CLI cases call ``main()`` in-process: output locations and numeric options are checked before any model or
data is loaded, so each case takes milliseconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from privnlu.cli import options
from privnlu.cli.main import build_parser, main
from privnlu.errors import PrivnluError
from privnlu.params import Range

SRC = Path(__file__).resolve().parents[2] / "src"


def run_cli(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)  # usage errors return 2 too
    return code, capsys.readouterr().err


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def assert_clean_failure(code: int, err: str, before: set[str], root: Path) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert 1 <= len(err.strip().splitlines()) <= 3, err
    assert listing(root) == before, "a file was left behind"


# --- the argparse tree ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def options_of(parser):
    """Every visible option of every (nested) command; the hidden old spellings are tested on their own below."""
    for path, p in options.walk(parser):
        for a in p._actions:
            if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction,
                                                       options.DeprecatedAlias)):
                yield path, p, a


def test_the_walk_reaches_every_nested_command(parser):
    from privnlu.cli.main import COMMANDS, GROUPS

    paths = {" ".join(path) for path, _ in options.walk(parser)}
    assert set(COMMANDS) | set(GROUPS) | {""} == paths
    assert all(p._defaults.get("func") is not None for path, p in options.walk(parser) if " ".join(path) in COMMANDS)


def test_every_parser_refuses_abbreviations(parser, capsys):
    assert all(p.allow_abbrev is False for _, p in options.walk(parser))
    code, err = run_cli(capsys, ["dp", "account", "--dp-epsilon", "1", "--dp-del", "0.1"])
    assert code == 2 and "unrecognized arguments: --dp-del" in err
    code, err = run_cli(capsys, ["dchi", "privatize", "x.txt", "--out", "y.txt", "--eta", "1", "--dchi-mech", "text"])
    assert code == 2 and "unrecognized arguments: --dchi-mech" in err
    code, err = run_cli(capsys, ["dp", "account", "--eps", "1"])  # nor is an old spelling abbreviated
    assert code == 2 and "unrecognized arguments: --eps" in err


def has_default(action: argparse.Action) -> bool:
    """True if the option has a default worth stating (not None, not a flag's False)."""
    return not (action.default is None or action.default is False or action.default is argparse.SUPPRESS)


#: argparse ``type`` functions that parse numbers (their options need a range)
NUMERIC_TYPES = {"int", "float", "int_list", "float_list", "m_list", "m_value", "number_list"}
#: dest names that look like outputs; every such option must be declared as one
OUTPUT_LIKE = {"out", "key_out", "app_dir", "ledger"}


def test_every_option_has_help_stating_its_default(parser):
    missing = [(" ".join(path), a.dest) for path, _, a in options_of(parser) if not a.help]
    assert not missing, f"options without help: {missing}"
    no_default = [(" ".join(path), a.dest) for path, _, a in options_of(parser)
                  if has_default(a) and "default" not in a.help]
    assert not no_default, f"help does not state the default: {no_default}"


def test_every_numeric_option_has_a_range_stated_in_help(parser):
    unranged = []
    for path, _, a in options_of(parser):
        name = getattr(a.type, "__name__", "")
        numeric = a.type in (int, float) or name in NUMERIC_TYPES
        if numeric and not (hasattr(a.type, "range") and "range:" in a.help):
            unranged.append((" ".join(path), a.dest))
    assert not unranged, f"numeric options without a range: {unranged}"


def test_every_output_option_is_declared(parser):
    undeclared = [(" ".join(path), a.dest) for path, p, a in options_of(parser)
                  if a.dest in OUTPUT_LIKE and a.dest not in options.outputs(p)]
    assert not undeclared, f"outputs not checked before work starts: {undeclared}"
    metavars = {(" ".join(path), a.dest): a.metavar for path, p, a in options_of(parser) if a.dest in options.outputs(p)}
    assert metavars and all(m in ("FILE", "DIR") for m in metavars.values()), metavars
    assert metavars[("train", "out")] == "DIR" and metavars[("encode", "out")] == "FILE"


def bad_values(rng: Range) -> list[str]:
    """Values just outside ``rng`` and the non-numbers."""
    vals = ["nan", "abc"]
    if not rng.inf_ok:
        vals.append("inf")
    if rng.lo > -math.inf:
        below = rng.lo - (1 if rng.integer else max(abs(rng.lo), 1e-3) * 0.5)
        if rng.lo_open:
            below = rng.lo
        if below not in rng.extra:
            vals.append(str(int(below)) if rng.integer else repr(below))
    if rng.hi < math.inf:
        vals.append(str(int(rng.hi) + 1) if rng.integer else repr(rng.hi * 2 if not rng.hi_open else rng.hi))
    if rng.integer:
        vals.append("2.5")
    if rng.items and not rng.empty_ok:
        vals.append(",")
    return vals


def test_every_numeric_option_rejects_out_of_range_values(parser):
    accepted = []
    for path, _, a in options_of(parser):
        rng = getattr(a.type, "range", None)
        if rng is None:
            continue
        for v in bad_values(rng):
            try:
                a.type(v)
            except (argparse.ArgumentTypeError, ValueError, PrivnluError):
                continue
            accepted.append((" ".join(path), a.dest, v))
    assert not accepted, f"accepted out-of-range values: {accepted}"


@pytest.mark.parametrize("argv", [
    ["train", "--task", "sst2", "--weight-decay", "nan"],
    ["train", "--task", "sst2", "--weight-decay", "-1"],
    ["train", "--task", "sst2", "--hidden", "-5"],
    ["train", "--task", "sst2", "--hidden", "0"],
    ["train", "--task", "sst2", "--hidden", ""],
    ["train", "--task", "sst2", "--lr", "inf"],
    ["sweep", "--task", "sst2", "--ks", ""],
    ["sweep", "--task", "sst2", "--ks", "0"],
    ["dchi", "calibrate", "--target", "0.5", "--eta-range", "1,inf"],
    ["dchi", "calibrate", "--target", "1.5"],
    ["federated", "--task", "sst2", "--eval-every", "0"],
    ["federated", "--task", "sst2", "--hidden", "0,4"],
    ["federated", "--task", "sst2", "--dropout", "1"],
    ["attack", "gradient", "--dims", ""],
    ["attack", "gradient", "--ks", "-1"],
    ["dchi", "privatize", "x.txt", "--out", "y.txt", "--eta", "inf"],
    ["dchi", "pretrain", "--objective", "vanilla", "--eta", "10", "--out", "o", "--mask-prob", "0"],
    ["dp", "account", "--dp-epsilon", "1e6"],
    ["dp", "account", "--dp-epsilon", "1", "--dp-delta", "1e-300"],
    ["dp", "account", "--dp-epsilon", "1", "--dp-delta", "1"],
    ["dp", "account", "--epsilon", "1e6"],  # an old spelling is checked the same way
    ["audit", "--task", "sst2", "--encodings-per-example", "1"],
    ["attack", "reconstruct", "--out", "x.json", "--dp-mechanism", "laplace", "--dp-epsilon", "-1"],
    ["encode", "--task", "sst2", "--out", "a.pt", "--key-out", "b.pt", "--seed", "-1"],
])
def test_bad_numbers_are_one_line_exit_2(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    code, err = run_cli(capsys, argv)
    assert_clean_failure(code, err, before, tmp_path)
    assert "range" in err or "empty" in err or "not a number" in err or "positive" in err


# --- outputs that cannot be written ----------------------------------------------------------------------------

#: one invocation per writing subcommand; {out} is the output under test, {key}/{good} a writable location
WRITERS = {
    "train": (["train", "--task", "sst2", "--out", "{out}"], "dir"),
    "train cache": (["train", "--task", "sst2", "--cache-dir", "{out}"], "dir"),
    "encode out": (["encode", "--task", "sst2", "--out", "{out}", "--key-out", "{key}"], "file"),
    "encode key": (["encode", "--task", "sst2", "--out", "{good}", "--key-out", "{out}"], "file"),
    "dp encode out": (["dp", "encode", "--task", "sst2", "--dp-epsilon", "1", "--out", "{out}", "--key-out", "{key}"], "file"),
    "dp encode key": (["dp", "encode", "--task", "sst2", "--dp-epsilon", "1", "--out", "{good}", "--key-out", "{out}"], "file"),
    "dp account": (["dp", "account", "--dp-epsilon", "1", "--out", "{out}"], "file"),
    "sweep": (["sweep", "--task", "sst2", "--out", "{out}"], "dir"),
    "dchi privatize": (["dchi", "privatize", "{input}", "--eta", "10", "--out", "{out}"], "file"),
    "dchi calibrate": (["dchi", "calibrate", "--target", "0.5", "--out", "{out}"], "file"),
    "dchi analyze": (["dchi", "analyze", "geometry", "--out", "{out}"], "file"),
    "dchi finetune": (["dchi", "finetune", "--task", "sst2", "--out", "{out}"], "dir"),
    "dchi pretrain": (["dchi", "pretrain", "--objective", "vanilla", "--eta", "10", "--out", "{out}"], "dir"),
    "federated": (["federated", "--task", "sst2", "--out", "{out}"], "dir"),
    "federated app-dir": (["federated", "--task", "sst2", "--deploy", "--superlink", "127.0.0.1:1", "--out", "{good}",
                           "--app-dir", "{out}"], "dir"),
    "attack gradient": (["attack", "gradient", "--out", "{out}"], "file"),
    "attack search": (["attack", "search", "--task", "sst2", "--out", "{out}"], "file"),
    "attack invert": (["attack", "invert", "--task", "sst2", "--out", "{out}"], "file"),
    "attack reconstruct": (["attack", "reconstruct", "--task", "sst2", "--out", "{out}"], "file"),
    "report": (["report", "{input}", "--out", "{out}"], "dir"),
    "reproduce": (["reproduce", "huang2020-table1", "--out", "{out}"], "dir"),
    "demo": (["demo", "--out", "{out}"], "dir"),
}


def fill(argv: list[str], out: str, root: Path) -> list[str]:
    subst = {"{out}": out, "{key}": str(root / "key.pt"), "{good}": str(root / "good.pt"), "{input}": str(root / "in.txt")}
    return [subst.get(x, x) for x in argv]


@pytest.mark.parametrize("case", sorted(WRITERS))
@pytest.mark.parametrize("problem", ["under_a_file", "wrong_type"])
def test_unwritable_output_is_one_line_and_writes_nothing(capsys, tmp_path, monkeypatch, case, problem):
    monkeypatch.chdir(tmp_path)
    argv, kind = WRITERS[case]
    (tmp_path / "regular.txt").write_text("a regular file\n")
    (tmp_path / "in.txt").write_text("some text\n")
    (tmp_path / "a_folder").mkdir()
    if problem == "under_a_file":
        out = str(tmp_path / "regular.txt" / "sub" / ("x.json" if kind == "file" else "run"))
    else:  # a folder where a file goes, a file where a folder goes
        out = str(tmp_path / ("a_folder" if kind == "file" else "regular.txt"))
    before = listing(tmp_path)
    code, err = run_cli(capsys, fill(argv, out, tmp_path))
    assert_clean_failure(code, err, before, tmp_path)
    assert not (tmp_path / "key.pt").exists()  # never a key without its release


def test_default_output_location_is_checked(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").write_text("not a folder\n")
    before = listing(tmp_path)
    code, err = run_cli(capsys, ["train", "--task", "sst2"])
    assert_clean_failure(code, err, before, tmp_path)
    assert "runs" in err


def test_existing_key_file_is_refused_without_force(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    key = tmp_path / "key.pt"
    key.write_bytes(b"precious key material")
    before = listing(tmp_path)
    for argv in (["encode", "--task", "sst2", "--out", "enc.pt", "--key-out", str(key)],
                 ["dp", "encode", "--task", "sst2", "--dp-epsilon", "1", "--out", "enc.pt", "--key-out", str(key)]):
        code, err = run_cli(capsys, argv)
        assert_clean_failure(code, err, before, tmp_path)
        assert "--force" in err and key.read_bytes() == b"precious key material"
    # with --force the output check passes (the command itself would then replace the key)
    args = build_parser().parse_args(["encode", "--task", "sst2", "--out", "enc.pt", "--key-out", str(key), "--force"])
    options.check_outputs(build_parser(), args)


def test_every_command_with_a_result_file_has_force(parser):
    for path, p in options.walk(parser):
        if options.replaces_files(p):
            assert any(a.dest == "force" for a in p._actions), path


def test_existing_result_file_is_refused_without_force(capsys, tmp_path, monkeypatch):
    """An earlier result is never silently replaced (attack, dchi-analyze, calibrate-eta,
    gradient-attack, dp account/audit, encode, privatize all write one file)."""
    monkeypatch.chdir(tmp_path)
    old = tmp_path / "result.json"
    old.write_text('{"earlier": true}\n')
    before = listing(tmp_path)
    for argv in (["dp", "account", "--dp-epsilon", "1", "--out", str(old)],
                 ["attack", "search", "--task", "sst2", "--out", str(old)],
                 ["attack", "gradient", "--out", str(old)]):
        code, err = run_cli(capsys, argv)
        assert_clean_failure(code, err, before, tmp_path)
        assert "refusing to replace an earlier result" in err and "--force" in err
    assert main(["dp", "account", "--dp-epsilon", "1", "--out", str(old), "--force"]) == 0
    assert json.loads(old.read_text()).get("earlier") is None


def test_release_and_key_are_written_together(tmp_path):
    from privnlu.io import SECRET_MODE, atomic_paths

    out, key = tmp_path / "enc.pt", tmp_path / "key.pt"
    with pytest.raises(RuntimeError):
        with atomic_paths((out, None), (key, SECRET_MODE)) as (o, k):
            k.write_text("key")
            raise RuntimeError("the payload could not be written")
    assert listing(tmp_path) == set()
    with atomic_paths((out, None), (key, SECRET_MODE)) as (o, k):
        k.write_text("key")
        o.write_text("payload")
    assert out.read_text() == "payload" and key.read_text() == "key"
    assert oct(key.stat().st_mode & 0o777) == oct(SECRET_MODE)


def test_read_only_folder_as_an_unprivileged_user():
    """Root ignores folder permissions: run as 'nobody' where we are root, else as ourselves."""
    folder, home = Path(tempfile.mkdtemp(prefix="privnlu-ro-")), Path(tempfile.mkdtemp(prefix="privnlu-home-"))
    try:
        os.chmod(folder, 0o555)
        os.chmod(home, 0o777)  # the user's own writable home (library caches), unlike the folder under test
        cmd = [sys.executable, "-m", "privnlu.cli.main", "dp", "account", "--dp-epsilon", "1", "--out", str(folder / "x.json")]
        env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": str(home), "MPLCONFIGDIR": str(home / "mpl")}
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("root, and no setpriv to drop privileges")
            try:
                import pwd

                pwd.getpwnam("nobody")
            except KeyError:
                pytest.skip("root, and no unprivileged user")
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd
            probe = subprocess.run(cmd[:4] + [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(SRC)!r}); import privnlu.cli.options"],
                                   capture_output=True, env=env, timeout=60)
            if probe.returncode != 0:
                pytest.skip("the unprivileged user cannot read this checkout")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert "not writable" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not any(folder.iterdir())
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


# --- stale, corrupt and incomplete results -----------------------------------------------------------------------


def _point(tmp_path, epochs: int):
    from privnlu.training.engine import RunSpec, with_scheme
    from privnlu.training import TrainConfig

    return with_scheme(RunSpec(task="sst2", train=TrainConfig(epochs=epochs)), m=4, k=2, inter=False)


def test_stale_sweep_point_is_refused_naming_file_and_setting(tmp_path):
    from privnlu.training.sweep import finished_point
    from privnlu.io import write_json_atomic

    path = tmp_path / "m4-k2.json"
    old = _point(tmp_path, epochs=1)
    write_json_atomic(path, {"kind": "train", "spec": old.to_json(), "score": 70.0, "best_score": 71.0, "m": "4", "k": 2,
                             "metric": "accuracy"})
    assert finished_point(path, old)["score"] == 70.0  # same settings: reused (resume)
    with pytest.raises(PrivnluError) as exc:
        finished_point(path, _point(tmp_path, epochs=3))
    assert str(path) in str(exc.value) and "train.epochs 1 -> 3" in str(exc.value)
    assert finished_point(path, _point(tmp_path, epochs=3), force=True) is None  # --force recomputes


@pytest.mark.parametrize("content", ["{not json", "[]", '{"kind": "train"}', ""])
def test_corrupt_sweep_point_is_recomputed_with_a_notice(tmp_path, capsys, content):
    from privnlu.training.sweep import finished_point

    path = tmp_path / "m4-k2.json"
    path.write_text(content)
    assert finished_point(path, _point(tmp_path, epochs=1)) is None
    err = capsys.readouterr().err
    assert str(path) in err and "recomputing" in err and len(err.strip().splitlines()) == 1


def test_dchi_finetune_run_records_and_checks_its_settings(tmp_path, capsys):
    from functools import partial

    from privnlu.io import write_json_atomic
    from privnlu.training import private_finetune as pf
    from privnlu.training.private_finetune import FinetuneConfig, _settings

    _finished = partial(pf._finished, log=lambda s: sys.stderr.write(s + "\n"))
    args = argparse.Namespace(task="sst2", model=None, data_dir=None, train_limit=100, dev_limit=None, max_length=64)
    cfg = FinetuneConfig(mode="token", eta=50.0, epochs=1)
    path = tmp_path / "run.json"
    write_json_atomic(path, {"kind": "dchi_finetune", "score": 60.0, "settings": _settings(args, cfg)})
    assert _finished(path, _settings(args, cfg), force=False)
    args.train_limit = 200
    with pytest.raises(PrivnluError, match="train_limit 100 -> 200"):
        _finished(path, _settings(args, cfg), force=False)
    assert not _finished(path, _settings(args, cfg), force=True)
    write_json_atomic(path, {"kind": "dchi_finetune", "score": 60.0})
    with pytest.raises(PrivnluError, match="records no settings"):
        _finished(path, _settings(args, cfg), force=False)
    path.write_text("{broken")
    assert not _finished(path, _settings(args, cfg), force=False) and "recomputing" in capsys.readouterr().err


def test_train_refuses_a_folder_holding_a_run(tmp_path):
    from privnlu.training.engine import check_run_dir

    check_run_dir(tmp_path, resume=False, overwrite=False)  # empty: fine
    (tmp_path / "key.pt").write_bytes(b"k")
    with pytest.raises(PrivnluError, match="--resume.*--force"):
        check_run_dir(tmp_path, resume=False, overwrite=False)
    check_run_dir(tmp_path, resume=True, overwrite=False)
    check_run_dir(tmp_path, resume=False, overwrite=True)


def test_report_skips_incomplete_records_and_never_leaves_partial_output(tmp_path, capsys):
    from privnlu.mechanisms.dp import calibrate

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "train", "task": "sst2", "label": "x"}))
    good = tmp_path / "dp.json"
    good.write_text(json.dumps({"kind": "dp", **calibrate("gaussian", epsilon=2, delta=1e-5, clip=1, dim=8, k=4,
                                                          epochs=1).to_json()}))
    out = tmp_path / "report"
    code, err = run_cli(capsys, ["report", str(bad), str(good), "--out", str(out)])
    assert code == 0 and str(bad) in err and "skipping" in err and (out / "index.html").is_file()
    assert oct((out / "index.html").stat().st_mode & 0o777) == "0o644"
    out2 = tmp_path / "report2"
    before = listing(tmp_path)
    code, err = run_cli(capsys, ["report", str(bad), "--out", str(out2)])
    assert_clean_failure(code, err, before, tmp_path)
    assert not out2.exists()


# --- SIGTERM ------------------------------------------------------------------------------------------------------

SIGTERM_SCRIPT = """
import sys, time
from privnlu.cli.main import install_signal_handlers
from privnlu.io import atomic_path
install_signal_handlers()
try:
    with atomic_path(sys.argv[1]) as tmp:
        tmp.write_bytes(b"half a checkpoint")
        print("writing", flush=True)
        time.sleep(120)
except KeyboardInterrupt:
    sys.exit(143)
"""


def test_sigterm_during_a_checkpoint_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "checkpoint.pt"
    target.write_bytes(b"the previous checkpoint")
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT, str(target)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert list(tmp_path.glob(".checkpoint.pt.*.tmp"))  # the write is in progress
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        proc.kill()
    assert listing(tmp_path) == {"checkpoint.pt"} and target.read_bytes() == b"the previous checkpoint"


def test_a_killed_writers_temporary_file_is_removed_by_the_next_run(tmp_path):
    from privnlu.io import remove_stale_temps

    (tmp_path / ".checkpoint.pt.abc123.tmp").write_bytes(b"x")
    (tmp_path / ".other.pt.abc.tmp").write_bytes(b"x")
    assert len(remove_stale_temps(tmp_path / "checkpoint.pt")) == 1
    assert listing(tmp_path) == {".other.pt.abc.tmp"}


# --- DP settings at the extremes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,epsilon,n", [("laplace", 1.0, 100_000), ("laplace", 1000.0, 4), ("laplace", 1.0, 10 ** 9),
                                            ("gaussian", 1.0, 10 ** 9), ("gaussian", 1000.0, 4), ("laplace", 0.001, 4)])
def test_extreme_dp_settings_answer_with_a_sound_bound(kind, epsilon, n):
    from privnlu.mechanisms.dp import calibrate

    t0 = time.perf_counter()
    cal = calibrate(kind, epsilon=epsilon, delta=1e-5, clip=1.0, dim=384, k=1, epochs=n)
    assert math.isfinite(cal.epsilon) and cal.epsilon <= epsilon and cal.valid
    assert time.perf_counter() - t0 < 120  # generous: a hang or a memory blow-up is what this catches


def test_too_many_compositions_are_refused():
    from privnlu.mechanisms.dp import MAX_PARTICIPATIONS, calibrate

    with pytest.raises(PrivnluError, match="more than privnlu accounts"):
        calibrate("laplace", epsilon=1, delta=1e-5, clip=1, dim=8, k=10, epochs=MAX_PARTICIPATIONS)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0, 20.0])
@pytest.mark.parametrize("k,epochs", [(1, 1), (4, 1), (4, 5)])
def test_correct_calibration_never_exceeds_its_target(kind, epsilon, k, epochs):
    from privnlu.mechanisms.dp import account, calibrate

    cal = calibrate(kind, epsilon=epsilon, delta=1e-5, clip=1.0, dim=16, k=k, epochs=epochs)
    assert cal.epsilon <= epsilon and cal.valid
    assert account(cal.mechanism, cal.participations, 1e-5) <= epsilon * (1 + 1e-9)
    assert cal.epsilon > 0.9 * epsilon  # and the noise is not wildly more than needed


def test_delta_limits_and_strict_json():
    from privnlu.io import json_text
    from privnlu.mechanisms.dp import MIN_DELTA, calibrate

    assert MIN_DELTA == MIN_DELTA
    with pytest.raises(PrivnluError, match="delta"):
        calibrate("gaussian", epsilon=1, delta=1e-300, clip=1, dim=8, k=1, epochs=1)
    cal = calibrate("gaussian", epsilon=1, delta=MIN_DELTA, clip=1, dim=8, k=4, epochs=1)
    assert math.isfinite(cal.epsilon) and cal.epsilon <= 1
    text = json_text({"kind": "dp", "e": math.inf, "n": math.nan, "t": torch.tensor([math.inf])})
    assert "Infinity" not in text and "NaN" not in text and json.loads(text)["e"] == "inf"


def test_result_json_records_its_provenance(tmp_path):
    from privnlu import __version__
    from privnlu.io import read_json, write_json_atomic

    write_json_atomic(tmp_path / "r.json", {"kind": "train", "score": 1.0})
    write_json_atomic(tmp_path / "other.json", {"not": "a result"})
    stamp = read_json(tmp_path / "r.json")["provenance"]
    assert stamp["privnlu"] == __version__ and set(stamp) == {"privnlu", "git_commit", "torch", "transformers", "flwr",
                                                              "dp-accounting"}
    assert stamp["torch"] == torch.__version__
    assert "provenance" not in read_json(tmp_path / "other.json")


def test_a_copied_checkout_names_the_source_commit_it_is_told(monkeypatch):
    """A working tree copied to a lent machine may carry an older ``.git``: the commit the copy was made from wins."""
    from privnlu import io

    monkeypatch.setenv(io.SOURCE_COMMIT_ENV, "0e6e9b9")
    assert io._git_commit() == "0e6e9b9"
    monkeypatch.delenv(io.SOURCE_COMMIT_ENV)
    assert io._git_commit() != "0e6e9b9"


# --- mechanism inputs ----------------------------------------------------------------------------------------------


def _dp_hider(rng):
    from privnlu.mechanisms.dp import DPTextHide, calibrate

    cal = calibrate("gaussian", epsilon=8, delta=1e-5, clip=1.0, dim=6, k=2, epochs=1)
    return DPTextHide(4, 2, dim=6, rng=rng, mechanism=cal.mechanism, calibration=cal)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("dp", [False, True])
def test_non_finite_representations_are_refused_before_any_secret_is_drawn(bad, dp):
    from privnlu.mechanisms.texthide import TextHide
    from privnlu.rng import SecretGenerator

    rng, fresh = SecretGenerator(7, warn=False), SecretGenerator(7, warn=False)
    hider = _dp_hider(rng) if dp else TextHide(4, 2, dim=6, rng=rng)
    _dp_hider(fresh) if dp else TextHide(4, 2, dim=6, rng=fresh)  # the same draws for the pool
    x = torch.randn(8, 6)
    x[3, 2] = bad
    with pytest.raises(PrivnluError, match="NaN or infinite"):
        hider.hide(x, torch.eye(2)[torch.arange(8) % 2])
    assert torch.equal(rng.uniform((5,)), fresh.uniform((5,)))  # nothing was drawn


def test_clipping_scales_huge_rows_down_instead_of_zeroing_them():
    from privnlu.mechanisms.dp import clip_rows

    x = torch.tensor([[1e19, -2e19, 3e19], [1e-3, 0.0, 0.0], [3e38, 3e38, -3e38]], dtype=torch.float32)
    for norm, p in (("l2", 2), ("l1", 1)):
        c = clip_rows(x, 1.0, norm)
        n = torch.linalg.vector_norm(c.double(), ord=p, dim=1)
        assert torch.isfinite(c).all()
        assert torch.allclose(n[[0, 2]], torch.ones(2, dtype=torch.float64), rtol=1e-5)
        assert torch.allclose(c[1], x[1])  # small rows are untouched
        assert torch.allclose(c[0] / c[0].abs().max(), x[0] / x[0].abs().max())  # direction kept


# --- key material never in a repr -----------------------------------------------------------------------------------


def test_key_material_is_not_in_any_repr():
    from privnlu.mechanisms.release import hide_dataset
    from privnlu.mechanisms.texthide import TextHide
    from privnlu.rng import SecretGenerator

    hider = TextHide(4, 3, dim=5, rng=SecretGenerator(1, warn=False))
    hb = hider.hide(torch.randn(6, 5), torch.eye(2)[torch.arange(6) % 2])
    for text in (repr(hb), str(hb)):
        assert "partners" not in text and "coeffs" not in text and "mask_ids" not in text
        assert f"{float(hb.coeffs[0, 0]):.4f}" not in text
    payload, key = hide_dataset(hider, torch.randn(6, 5), torch.eye(2)[torch.arange(6) % 2])
    for obj in (key, hider.pool, hider):
        assert "<secret>" in repr(obj) or "tensor" not in repr(obj)
        assert "tensor" not in repr(obj) and "tensor" not in str(obj)


@pytest.mark.parametrize("epsilon,rounds", [(1.0, 50), (8.0, 50), (0.5, 1000), (20.0, 5)])
def test_federated_dp_calibration_never_exceeds_its_target(epsilon, rounds):
    from privnlu.mechanisms.dp_fedsgd import epsilon_spent, noise_multiplier_for

    z = noise_multiplier_for(epsilon, 1e-5, rounds)
    assert epsilon_spent(z, rounds, 1e-5) <= epsilon


def test_lazy_command_table_matches_what_the_modules_register():
    """main.COMMANDS (paths, modules, help) is what the command modules register, so the help-only stubs that
    ``privnlu --help`` and ``privnlu <group> --help`` show cannot drift from the real commands."""
    import importlib

    from privnlu.cli import main as m

    registered: dict[str, dict[str, str]] = {}
    for path, (module, help_text) in m.COMMANDS.items():
        if module not in registered:
            sub = argparse.ArgumentParser().add_subparsers()
            importlib.import_module(f"privnlu.cli.{module}").register(sub)
            registered[module] = {a.dest: a.help for a in sub._choices_actions}
        name = path.rpartition(" ")[2]
        assert registered[module].get(name) == help_text, (path, module)
    # and every command a module registers is in the table, under one parent
    table = {(module, path.rpartition(" ")[2]) for path, (module, _) in m.COMMANDS.items()}
    assert {(module, name) for module, names in registered.items() for name in names} == table
    for module in registered:
        assert len({path.rpartition(" ")[0] for path, (mod, _) in m.COMMANDS.items() if mod == module}) == 1, module
    # a lazily built tree (one module imported) has the same commands as the full one
    full = {" ".join(path) for path, _ in options.walk(m.build_parser())}
    for path in ("train", "dchi privatize", "attack gradient", "dp audit", ""):
        assert {" ".join(q) for q, _ in options.walk(m.build_parser(path))} == full, path


@pytest.mark.parametrize("old,new", sorted(__import__("privnlu.cli.main", fromlist=["DEPRECATED"]).DEPRECATED.items()))
def test_a_deprecated_command_name_warns_once_and_runs_the_new_command(capsys, old, new):
    from privnlu.cli.main import build_parser

    assert main([*new.split(), "--help"]) == 0
    want = capsys.readouterr()
    assert main([old, "--help"]) == 0
    got = capsys.readouterr()
    from privnlu.cli.release import ALIASES, alias_notice

    assert got.out == want.out and want.err == (alias_notice(new) if new in ALIASES else "")
    assert got.err.splitlines() == [f"privnlu: '{old}' is deprecated and will be removed in the next release; use "
                                    f"'privnlu {new}'"]
    top = build_parser().format_help()
    assert f"{old} (now {new})" in " ".join(top.split())  # listed once, under the deprecated note
    assert f"\n    {old} " not in top  # but not among the commands


#: a valid value for each renamed option's new spelling, and the rest of a command line that parses
ALIAS_VALUES = {"--dp-epsilon": "2", "--dp-delta": "1e-6", "--dp-clip": "2", "--dp-calibration": "paper",
                "--dp-mechanism": "laplace", "--encodings-per-example": "3", "--scheme": "dchi-token",
                "--ms": "0,16", "--ks": "1,2", "--dp-epsilons": "1,8", "--dp-mechanisms": "gaussian",
                "--dp-calibrations": "correct", "--schemes": "none,dchi-text", "--force": None}
ALIAS_BASE = {"dp account": [], "dp encode": ["--task", "sst2", "--out", "e.st", "--key-out", "k.pt"], "dp audit": [],
              "encode": ["--task", "sst2", "--out", "e.st", "--key-out", "k.pt"], "attack reconstruct": ["--out", "r.json"],
              "dchi privatize": ["in.txt", "--out", "o.npz", "--eta", "10"], "sweep": ["--task", "sst2"],
              "dchi pretrain": ["--objective", "vanilla", "--eta", "10", "--out", "o"], "audit": ["--task", "sst2"],
              "reproduce": ["xie2022-figure1"], "dchi finetune": ["--task", "sst2", "--out", "o"],
              "train": ["--task", "sst2"]}


@pytest.mark.parametrize("cmd,old", sorted(options.RENAMED))
def test_a_renamed_option_still_works_and_warns_once(capsys, cmd, old):
    new = options.RENAMED[(cmd, old)]
    value = ALIAS_VALUES[new]
    base = [*cmd.split(), *ALIAS_BASE[cmd]]
    given = [value] if value is not None else []
    with_new = build_parser(cmd).parse_args([*base, new, *given])
    assert capsys.readouterr().err == ""
    with_old = build_parser(cmd).parse_args([*base, old, *given])
    err = capsys.readouterr().err.splitlines()
    assert vars(with_old) == vars(with_new)
    assert err == [f"privnlu: {old} is deprecated and will be removed in the next release; use {new}"]
    sub = build_parser(cmd)
    for word in cmd.split():
        sub = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
    assert not any(old in a.option_strings for a in sub._actions if a.help != argparse.SUPPRESS)


def test_an_old_value_that_moved_to_another_option(capsys):
    args = build_parser("dp audit").parse_args(["dp", "audit", "--mechanism", "dchi-txt", "--eta", "5"])
    assert args.scheme == "dchi-text" and args.mechanism is None
    assert "use --scheme dchi-text" in capsys.readouterr().err
    args = build_parser("dp audit").parse_args(["dp", "audit", "--mechanism", "laplace"])
    assert args.mechanism == "laplace" and args.scheme == "dp-ie"
    args = build_parser("dchi privatize").parse_args(["dchi", "privatize", "in.txt", "--out", "o.npz", "--eta", "1",
                                                      "--dchi-mechanism", "rep"])
    assert args.scheme == "dchi-token" and "use --scheme dchi-token" in capsys.readouterr().err


def test_building_any_command_parser_imports_no_torch():
    """``privnlu X --help`` must not import torch, transformers, Flower or the training code: an import-level fact,
    checked for the whole tree (every command module) and for each command's lazy tree. Of the audit, federated,
    training and experiments packages only their settings (declared options) are read, and of the attacks only
    their registry (the ``attack`` commands)."""
    code = ("import sys; from privnlu.cli.main import COMMANDS, build_parser; build_parser(); "
            "[build_parser(c) for c in COMMANDS]; "
            "heavy = ('torch', 'transformers', 'flwr', 'scipy', 'privnlu.models', "
            "'privnlu.mechanisms', 'privnlu.attacks', 'privnlu.report'); "
            "settings = ('privnlu.audit', 'privnlu.audit.grid', 'privnlu.federated', 'privnlu.federated.config', "
            "'privnlu.training', 'privnlu.training.settings', 'privnlu.experiments', 'privnlu.experiments.options', "
            "'privnlu.attacks', 'privnlu.attacks.registry'); "
            "print(sorted(m for m in sys.modules if m not in settings and (m.split('.')[0] in heavy "
            "or '.'.join(m.split('.')[:2]) in heavy "
            "or m.split('.')[:2] in (['privnlu', 'audit'], ['privnlu', 'federated'], ['privnlu', 'training'], "
            "['privnlu', 'experiments']))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)}).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_parser_choices_match_the_library():
    """The names the parsers offer (privnlu.choices, torch-free) are the ones the library accepts."""
    from privnlu import choices
    from privnlu.experiments import huang2020

    assert tuple(huang2020.SCALES) == choices.SCALE_NAMES


def test_top_level_help_imports_no_command_module():
    import subprocess
    import sys

    code = ("import sys; from privnlu.cli.main import main; rc = main(['--help']); "
            "print(sorted(k for k in sys.modules if k.startswith('privnlu.cli.') and k not in "
            "('privnlu.cli.main', 'privnlu.cli.options')), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[] False"


def test_every_command_has_quiet_and_it_silences_progress_bars(monkeypatch, capsys):
    from privnlu.cli.main import build_parser, main

    for path, p in options.walk(build_parser()):
        if p._defaults.get("func") is not None:
            assert any(a.dest == "quiet" for a in p._actions), " ".join(path)
    from tqdm import std
    from tqdm.auto import tqdm

    monkeypatch.setattr(std.tqdm, "__init__", std.tqdm.__init__)  # restored after the test
    assert main(["tasks", "--quiet"]) == 0
    capsys.readouterr()
    for _ in tqdm(range(3), desc="should not show"):
        pass
    assert "should not show" not in capsys.readouterr().err


def test_progress_bars_in_a_log_are_plain_lines():
    """A non-terminal stderr (a nohup log) gets one line per progress update."""
    import io

    from tqdm import tqdm

    from privnlu.io import PlainLines

    buf = io.StringIO()
    with tqdm(total=3, file=PlainLines(buf), mininterval=0, desc="steps", disable=False) as bar:  # another test may have run --quiet
        for _ in range(3):
            bar.update(1)
    text = buf.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert all(line.strip() for line in lines) and sum("steps" in line for line in lines) >= 3
    assert "3/3" in lines[-1]
    nested = io.StringIO()
    PlainLines(nested).write("\n\x1b[A\rinner:  50%|#####     | 1/2")  # a nested bar's redraw (position=1)
    assert "\x1b" not in nested.getvalue() and nested.getvalue().endswith("inner:  50%|#####     | 1/2\n")
