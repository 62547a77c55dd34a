"""Running a recipe into its results folder, point by point (the engine of ``privnlu reproduce``).

Each point writes one record, atomically, as it finishes; a rerun reads back the points whose record holds the
same settings and refuses (one line) a record made with other settings unless ``force``. ``jobs`` > 1 runs
independent points in that many spawned worker processes. The folder gets a ``reproduce.sh`` holding the one
command that makes its records.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import PrivnluError
from . import registry
from .options import BY_DEST, flag, spelled, text

#: options whose unset default means "the scale's" (huang2020 and xie2022 training recipes)
SCALE_SET = ("epochs", "batch_size", "lrs", "encoder_lrs", "train_limit")


@dataclass(frozen=True)
class Machine:
    """Where points run: not settings, never recorded."""

    data_dir: str | None = None
    cache_dir: str | None = None
    device: str = "cpu"
    progress: bool = True

    def context(self, out: Path, scratch: Path) -> registry.RunContext:
        return registry.RunContext(out=out, scratch=scratch, progress=self.progress, data_dir=self.data_dir,
                                   cache_dir=self.cache_dir, device=self.device)


def recipe_options(recipe: registry.Recipe, given: dict) -> dict:
    """The recipe's options from ``given`` (dest -> value, None = not given), refusing options it does not take;
    checked by the recipe."""
    given = {d: given.get(d) for d in BY_DEST}
    if given.get("tasks") and "task" in recipe.defaults and "tasks" not in recipe.defaults:
        if len(given["tasks"]) != 1:
            raise PrivnluError(f"{recipe.name} runs one task: give --task")
        given["task"], given["tasks"] = given["tasks"][0], None
    extra = [d for d, v in given.items() if v is not None and d not in recipe.defaults]
    if extra:
        takes = ", ".join(flag(d) for d in recipe.defaults) or "none"
        raise PrivnluError(f"{recipe.name} takes no {', '.join(flag(d) for d in extra)} (its options: {takes})")
    opts = registry.options(recipe, given)
    recipe.check(opts)
    check_tasks(opts)
    return opts


def check_tasks(opts: dict) -> None:
    """Refuse an unknown ``task`` or ``tasks`` name before any folder or file is made (one line)."""
    from ..data.tasks import get_task

    named = [opts["task"]] if isinstance(opts.get("task"), str) else []
    for t in [*named, *(opts.get("tasks") or ())]:
        get_task(str(t))


def plan(recipe: registry.Recipe, points: list, out: Path) -> tuple[list, list, list[str]]:
    """(points to run, points done, one line per record made with other settings or unreadable)."""
    todo, done, clashes = [], [], []
    for p in points:
        state = record_state(recipe, p, out)
        (done if state == DONE else todo).append(p)
        if state not in (DONE, MISSING):
            clashes.append(state)
    return todo, done, clashes


DONE, MISSING = "done", "missing"


def record_state(recipe: registry.Recipe, point, out: Path) -> str:
    """``DONE`` (a record with the point's settings), ``MISSING``, or one line on the record that is in the way."""
    from ..io import read_json

    path = out / f"{point.name}.json"
    if not path.exists():
        return MISSING
    try:
        old = recipe.settings_of(read_json(path))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return f"{path} is not a record this recipe made"
    diff = registry.settings_diff(old, registry.normal(registry.public_record(point.settings)))
    if not diff:
        return DONE
    return f"{path} was made with other settings ({'; '.join(diff[:3])}{'; ...' if len(diff) > 3 else ''})"


def point_claim(folder: Path, point: str) -> contextlib.AbstractContextManager[None]:
    """Hold ``folder/.<point>.lock`` while a point runs (:func:`~privnlu.io.exclusive_lock`), so that two
    ``reproduce`` commands over one folder never run a point at once: the second waits, then finds the record."""
    from ..io import exclusive_lock

    return exclusive_lock(folder / f".{point}.lock")


# -- reproduce.sh ----------------------------------------------------------------------------------------------

def command_line(recipe: registry.Recipe, opts: dict, out: Path) -> str:
    """``privnlu reproduce <recipe>`` with the options that differ from the recipe's defaults, in the recipe's
    order, and ``--out`` where the folder is not the recipe's default (relative to the working folder, or the
    script's own folder when outside it)."""
    words = ["privnlu", "reproduce", recipe.name]
    for dest, default in recipe.defaults.items():
        if registry.normal(opts[dest]) != registry.normal(default):
            words += spelled(dest, opts[dest])
    target = Path(os.path.relpath(out.absolute(), Path.cwd())) if _inside(out) else None
    line = " ".join(shlex.quote(w) for w in words)
    if target is not None and target == recipe.folder(opts):
        return line
    return line + " --out " + (shlex.quote(str(target)) if target is not None else '"$(dirname "$0")"')


def _inside(out: Path) -> bool:
    try:
        out.absolute().relative_to(Path.cwd())
        return True
    except ValueError:
        return False


def write_script(out: Path, command: str, names: list[str], say: Callable[[str], None]) -> None:
    """``out/reproduce.sh``, unless the folder holds records that this command does not make (then an earlier
    command's script, which does, is kept)."""
    from ..io import umask_mode, write_text_atomic

    from ..io import record_files

    others = [p.stem for p in record_files(out) if p.stem not in set(names)]
    if others:
        say(f"reproduce.sh not rewritten: {out} holds records this command does not make ({', '.join(others[:3])}"
            f"{', ...' if len(others) > 3 else ''})")
        return
    write_text_atomic(out / "reproduce.sh", f"#!/bin/sh\n{command}\n", mode=umask_mode(executable=True))


# -- running points --------------------------------------------------------------------------------------------

def run_point(name: str, opts: dict, point_name: str, out: str, machine: Machine) -> tuple[str, float, str]:
    """Run one point of recipe ``name`` and write its record (free of local paths) atomically; the scratch the
    engine left beside it is removed. A record with the point's settings that another command wrote since the
    plan is kept, not remade (:func:`point_claim`). Returns (point, seconds, a one-line summary)."""
    from ..io import read_json, umask_mode, write_json_atomic

    recipe = registry.get(name)
    point = next(p for p in recipe.points(opts) if p.name == point_name)
    folder = Path(out)
    t0 = time.time()
    with point_claim(folder, point.name):
        if record_state(recipe, point, folder) == DONE:
            made = summary(read_json(folder / f"{point.name}.json"))
            return point.name, 0.0, f"made meanwhile by another command: {made}"
        ctx = machine.context(folder, folder / f".{point.name}.part.json")
        rec = registry.public_record(recipe.run(opts, point, ctx))
        write_json_atomic(folder / f"{point.name}.json", rec, mode=umask_mode())
        ctx.scratch.unlink(missing_ok=True)
    return point.name, time.time() - t0, summary(rec)


def summary(rec: dict) -> str:
    """What a point's record found, in one line."""
    if "score" in rec:
        return f"{rec.get('metric', 'score')} {rec['score']:.2f}"
    if isinstance(rec.get("conditions"), dict):  # an attack: its first metric or each method's success
        parts = []
        for name, c in rec["conditions"].items():
            if "methods" in c:
                parts.append(f"{name} " + "/".join(f"{m} {v['success']:.0f}%" for m, v in c["methods"].items()
                                                   if "success" in v))
            elif c.get("metrics"):
                metric, value = next(iter(c["metrics"].items()))
                parts.append(f"{name} {metric} {value:.1f}")
        return "; ".join(parts) or str(rec.get("kind", ""))
    if rec.get("kind") == "dchi":
        from ..attacks.dchi.analysis import headline

        lines = headline(rec)
        return lines[0] + (f" (+{len(lines) - 1} more)" if len(lines) > 1 else "") if lines else "dchi"
    if isinstance(rec.get("results"), list) and rec["results"] and "eps_lb" in rec["results"][0]:
        return "; ".join(f"eps_lb {r['eps_lb']:.3g} vs claimed {r['claimed_epsilon']:.3g}: {r['verdict']}"
                         for r in rec["results"][:2])
    if "epsilon_lb" in rec:
        return f"eps_lb {rec['epsilon_lb']:.3g} vs claimed {rec.get('claimed_epsilon')}"
    if isinstance(rec.get("success"), dict):  # per method
        return "; ".join(f"{m} success {v['success']:.0f}%" for m, v in rec["success"].items() if "success" in v)
    return str(rec.get("kind", ""))


def _show(lines: list[str]) -> None:
    if lines:
        print("\n".join(lines), flush=True)


#: point summaries ``privnlu reproduce`` prints at the end (the rest are in the records)
HEADLINE_POINTS = 8


def headline(out: Path, names: list[str]) -> list[str]:
    """A few lines: what the recipe's records in ``out`` found, one point a line."""
    from ..io import read_json

    lines = []
    for name in names[:HEADLINE_POINTS]:
        try:
            lines.append(f"  {name}: {summary(read_json(out / f'{name}.json'))}")
        except (OSError, ValueError, KeyError, TypeError, PrivnluError):
            continue
    if len(names) > HEADLINE_POINTS:
        lines.append(f"  ... and {len(names) - HEADLINE_POINTS} more points in {out}")
    return lines


def _init_worker(threads: int, quiet: bool) -> None:
    """A worker: ``threads`` torch threads, SIGTERM unwinds like Ctrl-C (temporary files removed)."""
    import torch

    from ..io import install_signal_handlers, silence_progress_bars

    torch.set_num_threads(threads)
    install_signal_handlers()
    if quiet:
        silence_progress_bars()


def execute(name: str, opts: dict, out: Path, todo: list, done: set[str], machine: Machine, *, jobs: int,
            threads: int, say: Callable[[str], None]) -> None:
    """Run the points ``todo`` (a point after the points it reads), serially or in ``jobs`` spawned workers."""
    def report(result: tuple[str, float, str]) -> None:
        point, seconds, line = result
        say(f"  {point}: {line} ({seconds:.0f} s)")

    finished = set(done)
    if jobs == 1:
        for p in todo:
            missing = [a for a in p.after if a not in finished]
            if missing:
                raise PrivnluError(f"{p.name} needs {', '.join(missing)} first")
            report(run_point(name, opts, p.name, str(out), machine))
            finished.add(p.name)
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pending, running, failure = list(todo), {}, None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(threads, not machine.progress))
    try:
        while pending or running:
            ready = [p for p in pending if all(a in finished for a in p.after)] if failure is None else []
            for p in ready[: max(0, jobs - len(running))]:
                pending.remove(p)
                running[pool.submit(run_point, name, opts, p.name, str(out), machine)] = p
            if not running:
                if failure is None and pending:
                    raise PrivnluError(f"{pending[0].name} needs {', '.join(pending[0].after)}, which did not run")
                break
            finished_now, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in finished_now:
                p = running.pop(f)
                try:
                    report(f.result())
                    finished.add(p.name)
                except Exception as exc:  # the others finish and keep their records; then the first error
                    failure = failure or exc
        if failure is not None:
            raise failure
    except BaseException:
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def reproduce(name: str, given: dict, *, out: str | Path | None = None, machine: Machine = Machine(),
              jobs: int = 1, threads: int | None = None, force: bool = False, dry_run: bool = False,
              say: Callable[[str], None] = print) -> list[str]:
    """Run recipe ``name`` with the ``given`` options into ``out`` (default: its folder), resuming; returns the
    names of the points run (with ``dry_run``, prints the plan and runs none)."""
    recipe = registry.get(name)
    opts = recipe_options(recipe, given)
    out = Path(out) if out else recipe.folder(opts)
    points = recipe.points(opts)
    names = [p.name for p in points]
    if len(set(names)) != len(names):
        raise PrivnluError(f"{recipe.name}: two points share a file name; check the options")
    todo, done, clashes = plan(recipe, points, out)
    if clashes and not force:
        raise PrivnluError(clashes[0] + (f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else "")
                           + ": use another --out, or --force to recompute")
    command = command_line(recipe, opts, out)
    if dry_run:
        for p in points:
            print(f"{'run ' if p in todo else 'done'}  {p.name}")
        print(f"{recipe.name}: {len(todo)} to run, {len(done)} done, in {out}")
        print(command)
        return []
    out.mkdir(parents=True, exist_ok=True)
    write_script(out, command, names, say)
    if not todo:
        say(f"{recipe.name}: all {len(done)} points done in {out}")
        _show(headline(out, names))
        return []
    if threads and jobs == 1:
        import torch

        torch.set_num_threads(threads)
    recipe.warm(opts, machine.context(out, out / ".warm"))
    t0 = time.time()
    execute(recipe.name, opts, out, todo, {p.name for p in done}, machine, jobs=jobs, threads=threads or 1, say=say)
    say(f"{recipe.name}: {len(todo)} points in {time.time() - t0:.0f} s; results in {out}")
    _show(headline(out, names))
    return [p.name for p in todo]


# -- --list ----------------------------------------------------------------------------------------------------

def _shown(dest: str, v, *, scaled: bool) -> str:
    """An option's default as --list shows it."""
    if dest == "repeats":
        return f"{v[1]}" if v[0] == 1 else f"{v[0]}-{v[1]}"
    if isinstance(v, bool):
        return "on" if v else "off"
    if v is None:
        return "(the scale's)" if scaled and dest in SCALE_SET else "(none)"
    return text(v)


def listing(recipes: dict[str, registry.Recipe]) -> str:
    """One block per recipe: name, paper and artefact, title, default folder and options with their defaults."""
    lines = []
    for r in sorted(recipes.values(), key=lambda r: r.name):
        lines.append(f"{r.name}  [{r.paper}, {r.artefact}]  -> {r.folder(dict(r.defaults))}/")
        lines.append(f"    {r.title}")
        shown = [f"{flag(d)} {_shown(d, v, scaled='scale' in r.defaults)}" for d, v in r.defaults.items()]
        if shown:
            lines.append("    options: " + "; ".join(shown))
    if registry.ALIASES:
        lines.append("deprecated names, accepted until the next release: "
                     + ", ".join(f"{o} (now {n})" for o, n in sorted(registry.ALIASES.items())))
    return "\n".join(lines)
