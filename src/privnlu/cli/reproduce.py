"""``privnlu reproduce <recipe>``: run a registered paper recipe (:mod:`privnlu.experiments.registry`) into its
results folder, point by point.

Each point writes one record, atomically, as it finishes; a rerun reads back the points whose record holds the
same settings and refuses (one line) a record made with other settings unless ``--force``. ``--jobs N`` runs
independent points in N worker processes. The folder gets a ``reproduce.sh`` holding the one command that makes
its records.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
from pathlib import Path

from ..choices import SCALE_NAMES, parse_m
from ..errors import PrivnluError
from .common import int_list, m_list, positive_int, say
from .options import POS_INT, Range

def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, not '{text}'") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _points(text: str) -> tuple[tuple[float, int], ...]:
    """``M:K,...`` grid points."""
    try:
        return tuple((parse_m(m), int(k)) for m, k in (p.split(":") for p in _names(text)))
    except (ValueError, PrivnluError):
        raise argparse.ArgumentTypeError(f"expected comma-separated M:K points, e.g. 0:1,256:4, not '{text}'") from None


def _repeats(text: str) -> tuple[int, int]:
    """``N`` (repeats 1 to N) or ``A-B`` (repeats A to B)."""
    try:
        lo, _, hi = text.partition("-")
        first, last = (int(lo), int(hi)) if hi else (1, int(lo))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or A-B, e.g. 5 or 2-9, not '{text}'") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"'{text}': repeats are numbered from 1, first <= last")
    return first, last


def _ranged(parse, rng: Range):
    return rng.wrap(parse)


#: dest -> (flags, argparse keyword arguments); the recipe options, in one catalogue (a recipe takes a subset,
#: ``Recipe.defaults``, and refuses the others)
OPTIONS: dict[str, tuple[tuple[str, ...], dict]] = {
    "tasks": (("--tasks",), dict(type=_names, metavar="T,...", help="tasks")),
    "task": (("--task",), dict(help="task")),
    "variants": (("--variants",), dict(type=_names, help="huang2020-table1: runs of baseline,intra,inter")),
    "mode": (("--mode",), dict(choices=["frozen", "joint"], help="frozen encoder features, or joint fine-tuning")),
    "scale": (("--scale",), dict(choices=sorted(SCALE_NAMES),
                                 help="budget: quick (2,000 examples, 3 epochs), cpu (20,000 examples, 20 epochs, TextHide "
                                      "runs >= 2,000 steps), paper (full data, the paper's encoder lr grid; a GPU run)")),
    "epochs": (("--epochs",), dict(type=positive_int, help="training epochs (overrides the scale's)")),
    "batch_size": (("--batch-size",), dict(type=positive_int, help="examples per optimizer step")),
    "lrs": (("--lrs",), dict(type=_floats, help="head learning rates to select from (frozen mode)")),
    "encoder_lrs": (("--encoder-lrs",), dict(type=_floats, help="encoder learning rates to select from (joint mode)")),
    "train_limit": (("--train-limit",), dict(type=positive_int, help="use only the first N training examples")),
    "model": (("--model",), dict(help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")),
    "public": (("--public",), dict(type=_names, help="public corpus (table1) or corpora (table6) of TextHide-inter")),
    "m_grid": (("--ms",), dict(metavar="M,...", type=m_list, help="pool sizes m")),
    "ks": (("--ks",), dict(metavar="K,...", type=int_list, help="mixing sizes k (huang2020-table2: 0 = no TextHide)")),
    "grid_points": (("--points",), dict(metavar="M:K,...", type=_points,
                                        help="huang2020-figure2: these (m, k) points instead of --ms x --ks")),
    "repeats": (("--repeats",), dict(metavar="N|A-B", type=_repeats,
                                     help="run every point N times (or repeats A to B); repeat r > 1 is file <name>-rR")),
    "masked": (("--masked",), dict(action="store_true", default=None, help="add TextHide's (16, 4) sign masks to DP-IE")),
    "noisy_queries": (("--noisy-queries",), dict(action="store_true", default=None, help="noise dev queries too")),
    "epsilons": (("--dp-epsilons",), dict(type=_ranged(_floats, Range(lo=0, lo_open=True, hi=1000.0, items=True)),
                                          help="epsilons")),
    "mechanisms": (("--dp-mechanisms",), dict(type=_names, help="gaussian,laplace")),
    "calibrations": (("--dp-calibrations",), dict(type=_names, help="correct,paper")),
    "victim": (("--victim",), dict(choices=["hidden", "input"], help="gradient attack victim")),
    "dims": (("--dims",), dict(type=int_list, help="masked layer widths d")),
    "trials": (("--trials",), dict(type=positive_int, help="attacks per (d, k) cell")),
    "iterations": (("--iterations",), dict(type=positive_int, help="L-BFGS iterations per attack")),
    "source": (("--source",), dict(metavar="DIR", help="the results folder this recipe reads (default: its recipe's)")),
    "queries": (("--queries",), dict(type=positive_int, help="attacked examples")),
    "pooling": (("--pooling",), dict(choices=["cls", "pooler", "mean"], help="sentence representation")),
    "sbert": (("--sbert",), dict(action="store_const", const=True, default=None, help="add the SBERT cosine metric")),
    "no_sbert": (("--no-sbert",), dict(action="store_const", const=False, dest="sbert", default=None,
                                       help="skip the SBERT cosine metric")),
    "etas": (("--etas",), dict(type=_ranged(_floats, Range(lo=0, lo_open=True, hi=1e12, items=True)), help="etas")),
    "top_etas": (("--top-etas",), dict(type=_ranged(_floats, Range(lo=0, lo_open=True, hi=1e12, items=True)),
                                       help="qu2021-table1-2: etas of the top-outputs table (one record each)")),
    "tokens": (("--tokens",), dict(help="'vocab' (uniform regular tokens) or a task whose dev tokens are used")),
    "sample": (("--sample",), dict(type=positive_int, help="a uniform sample of N regular tokens (default: all)")),
    "draws": (("--draws",), dict(type=positive_int, help="draws per token")),
    "max_tokens": (("--max-tokens",), dict(type=positive_int, help="use only the first N tokens")),
    "target": (("--target",), dict(type=float, help="target inversion accuracy")),
    "seeds": (("--seeds",), dict(type=_ranged(int_list, Range(lo=0, hi=2 ** 32 - 1, integer=True, items=True)),
                                 help="experiment seeds, one point each")),
    "conditions": (("--conditions",), dict(type=_names, help="M:K conditions")),
    "methods": (("--methods",), dict(type=_names, help="clustering methods")),
    "nmf_repair_iters": (("--nmf-repair-iters",), dict(type=_ranged(int, Range(lo=0, integer=True, note="0 = no repair")),
                                                       help="nmf iterations after duplicate groups are re-seeded")),
    "repair": (("--repair",), dict(type=_names, metavar="RxI,...", help="nmf repair schedules: ROUNDS x ITERATIONS")),
    "encoders": (("--encoders",), dict(type=_names, help="transformer,bilstm")),
    "modes": (("--modes",), dict(type=_names, help="fine-tuning modes: null,sequence,token,text")),
    "n": (("--n",), dict(type=_ranged(int_list, Range(lo=1, integer=True, items=True)), help="private examples")),
    "graph": (("--graph",), dict(type=_ranged(int_list, Range(lo=0, integer=True, items=True, note="0 = all pairs")),
                                 help="k-NN graph neighbours per encoding")),
    "batch_sizes": (("--batch-sizes",), dict(type=_ranged(int_list, Range(lo=1, integer=True, items=True)),
                                             help="client batch sizes")),
    "span_trials": (("--span-trials",), dict(type=_ranged(int, Range(lo=0, integer=True)),
                                             help="messages per batch size also given the span test")),
    "budget": (("--budget",), dict(type=_ranged(int, POS_INT), help="gradient evaluations of the sentence-linking search")),
    "schemes": (("--schemes",), dict(type=_names, help="none and/or texthide")),
    "seed": (("--seed",), dict(type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")),
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="run a paper's experiment recipe",
                       description="Run a registered recipe into its results folder (results/<paper>/<artefact>), one "
                                   "record per point, atomically as each finishes. A rerun skips the points whose "
                                   "record holds the same settings and refuses a record made with other settings "
                                   "(--force recomputes it). The folder gets reproduce.sh, the command that makes "
                                   "its records. `privnlu reproduce --list` lists the recipes.")
    p.add_argument("recipe", nargs="?", help="recipe name, <paper>-<artefact> (see --list)")
    p.add_argument("--list", action="store_true", help="list every recipe with its paper, artefact, title and folder")
    p.add_argument("--out", help="results folder (default: the recipe's, results/<paper>/<artefact>[-<variant>])")
    p.add_argument("--jobs", type=_ranged(int, POS_INT), default=1,
                   help="run independent points in N worker processes")
    p.add_argument("--threads", type=_ranged(int, POS_INT),
                   help="torch threads per worker (default: 1 with --jobs > 1, else torch's own)")
    p.add_argument("--force", action="store_true", help="recompute points whose record was made with other settings")
    p.add_argument("--dry-run", action="store_true", help="print which points would run and which are done; run none")
    p.add_argument("--data-dir", help="GLUE data folder")
    p.add_argument("--cache-dir", help="feature cache folder")
    p.add_argument("--device", help="cpu or cuda (default: cpu)")
    g = p.add_argument_group("recipe options (each recipe takes some; --list shows which, and their defaults)")
    for dest, (flags, kw) in OPTIONS.items():
        g.add_argument(*flags, **({"dest": dest} | kw if "dest" not in kw else kw))
    for a in p._actions:  # the ranges this module states itself (the catalogue's are added by options.finalize)
        rng = getattr(a.type, "range", None)
        if rng is not None and a.help and "range:" not in a.help:
            a.help += f"; range: {rng.text()}"
    g.add_argument("--quick", action="store_const", const="quick", dest="scale", help="same as --scale quick")
    p.set_defaults(func=run)


# -- the command ------------------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    from ..experiments import registry

    if args.list or not args.recipe:
        print(listing(registry.load()))
        return 0
    registry.load()
    name = registry.ALIASES.get(args.recipe, args.recipe)
    if name != args.recipe:
        say(f"privnlu: recipe '{args.recipe}' is deprecated and will be removed in the next release; use '{name}'")
    recipe = registry.get(name)
    opts = recipe_options(recipe, args)
    out = Path(args.out) if args.out else recipe.folder(opts)
    points = recipe.points(opts)
    names = [p.name for p in points]
    if len(set(names)) != len(names):
        raise PrivnluError(f"{recipe.name}: two points share a file name; check the options")
    todo, done, clashes = plan(recipe, points, out)
    if clashes and not args.force:
        raise PrivnluError(clashes[0] + (f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else "")
                           + ": use another --out, or --force to recompute")
    command = command_line(recipe, opts, out)
    if args.dry_run:
        for p in points:
            print(f"{'run ' if p in todo else 'done'}  {p.name}")
        print(f"{recipe.name}: {len(todo)} to run, {len(done)} done, in {out}")
        print(command)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    write_script(out, command, names)
    if not todo:
        say(f"{recipe.name}: all {len(done)} points done in {out}")
        return 0
    if args.threads and args.jobs == 1:
        import torch

        torch.set_num_threads(args.threads)
    env = {"data_dir": args.data_dir, "cache_dir": args.cache_dir, "device": args.device or "cpu",
           "progress": not args.quiet}
    from ..experiments.registry import RunContext

    recipe.warm(opts, RunContext(out=out, scratch=out / ".warm", progress=env["progress"], data_dir=args.data_dir,
                                 cache_dir=args.cache_dir, device=env["device"]))
    t0 = time.time()
    execute(recipe.name, opts, out, todo, {p.name for p in done}, env, jobs=args.jobs, threads=args.threads or 1)
    say(f"{recipe.name}: {len(todo)} points in {time.time() - t0:.0f} s; results in {out}")
    return 0


def recipe_options(recipe, args: argparse.Namespace) -> dict:
    """The recipe's options from the command line (refusing options it does not take), checked."""
    from ..experiments import registry

    given = {dest: getattr(args, dest, None) for dest in {kw.get("dest", d) for d, (_, kw) in OPTIONS.items()}}
    if given.get("tasks") and "task" in recipe.defaults and "tasks" not in recipe.defaults:
        if len(given["tasks"]) != 1:
            raise PrivnluError(f"{recipe.name} runs one task: give --task")
        given["task"], given["tasks"] = given["tasks"][0], None
    extra = [d for d, v in given.items() if v is not None and d not in recipe.defaults]
    if extra:
        flags = ", ".join(_flag(d) for d in extra)
        takes = ", ".join(_flag(d) for d in recipe.defaults) or "none"
        raise PrivnluError(f"{recipe.name} takes no {flags} (its options: {takes})")
    opts = registry.options(recipe, given)
    recipe.check(opts)
    return opts


def _flag(dest: str) -> str:
    if dest == "sbert":
        return "--sbert/--no-sbert"
    for d, (flags, kw) in OPTIONS.items():
        if kw.get("dest", d) == dest:
            return flags[0]
    return "--" + dest.replace("_", "-")


def plan(recipe, points: list, out: Path) -> tuple[list, list, list[str]]:
    """(points to run, points done, one line per record made with other settings or unreadable)."""
    from ..experiments.registry import normal, public_record, settings_diff
    from ..io import read_json

    todo, done, clashes = [], [], []
    for p in points:
        path = out / f"{p.name}.json"
        if not path.exists():
            todo.append(p)
            continue
        try:
            old = recipe.settings_of(read_json(path))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            clashes.append(f"{path} is not a record this recipe made")
            todo.append(p)
            continue
        diff = settings_diff(old, normal(public_record(p.settings)))
        if diff:
            more = "; ..." if len(diff) > 3 else ""
            clashes.append(f"{path} was made with other settings ({'; '.join(diff[:3])}{more})")
            todo.append(p)
        else:
            done.append(p)
    return todo, done, clashes


# -- reproduce.sh ----------------------------------------------------------------------------------------------

def _text(v) -> str:
    """An option value as the command line spells it."""
    if isinstance(v, (list, tuple)):
        if v and isinstance(v[0], (list, tuple)):  # M:K points
            return ",".join(f"{_text(m)}:{_text(k)}" for m, k in v)
        return ",".join(_text(x) for x in v)
    if isinstance(v, float):
        return "inf" if v == float("inf") else (str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:g}")
    return str(v)


def command_line(recipe, opts: dict, out: Path) -> str:
    """``privnlu reproduce <recipe>`` with the options that differ from the recipe's defaults, in the recipe's
    order, and ``--out`` where the folder is not the recipe's default (relative to the working folder, or the
    script's own folder when outside it)."""
    words = ["privnlu", "reproduce", recipe.name]
    for dest, default in recipe.defaults.items():
        v = opts[dest]
        if _same(v, default):
            continue
        if dest == "repeats":
            words += ["--repeats", str(v[1]) if v[0] == 1 else f"{v[0]}-{v[1]}"]
        elif dest == "sbert":
            words.append("--sbert" if v else "--no-sbert")
        elif isinstance(v, bool):
            words += [_flag(dest)] if v else []
        else:
            words += [_flag(dest), _text(v)]
    default = recipe.folder(opts)
    target = Path(os.path.relpath(out.absolute(), Path.cwd())) if _inside(out) else None
    line = " ".join(shlex.quote(w) for w in words)
    if target is not None and target == default:
        return line
    return line + " --out " + (shlex.quote(str(target)) if target is not None else '"$(dirname "$0")"')


def _same(a, b) -> bool:
    from ..experiments.registry import normal

    return normal(a) == normal(b)


def _inside(out: Path) -> bool:
    try:
        out.absolute().relative_to(Path.cwd())
        return True
    except ValueError:
        return False


def write_script(out: Path, command: str, names: list[str]) -> None:
    """``out/reproduce.sh``, unless the folder holds records that this command does not make (then an earlier
    command's script, which does, is kept)."""
    from ..io import write_text_atomic

    script = out / "reproduce.sh"
    others = sorted(p.stem for p in out.glob("*.json") if p.stem not in set(names))
    if others:
        say(f"reproduce.sh not rewritten: {out} holds records this command does not make ({', '.join(others[:3])}"
            f"{', ...' if len(others) > 3 else ''})")
        return
    write_text_atomic(script, f"#!/bin/sh\n{command}\n", mode=0o755)


# -- running points --------------------------------------------------------------------------------------------

def run_point(name: str, opts: dict, point_name: str, out: str, env: dict) -> tuple[str, float, str]:
    """Run one point of recipe ``name`` and write its record (free of local paths) atomically; the scratch the
    engine left beside it is removed. Returns (point, seconds, a one-line summary)."""
    from ..experiments import registry
    from ..io import write_json_atomic

    recipe = registry.get(name)
    point = next(p for p in recipe.points(opts) if p.name == point_name)
    folder = Path(out)
    ctx = registry.RunContext(out=folder, scratch=folder / f".{point.name}.part.json", progress=env["progress"],
                              data_dir=env["data_dir"], cache_dir=env["cache_dir"], device=env["device"])
    t0 = time.time()
    rec = registry.public_record(recipe.run(opts, point, ctx))
    write_json_atomic(folder / f"{point.name}.json", rec, mode=0o644)
    ctx.scratch.unlink(missing_ok=True)
    seconds = time.time() - t0
    return point.name, seconds, summary(rec)


def summary(rec: dict) -> str:
    if "score" in rec:
        return f"{rec.get('metric', 'score')} {rec['score']:.2f}"
    return str(rec.get("kind", ""))


def _init_worker(threads: int, quiet: bool) -> None:
    """A worker: ``threads`` torch threads, SIGTERM unwinds like Ctrl-C (temporary files removed)."""
    import torch

    from .main import install_signal_handlers, silence_progress_bars

    torch.set_num_threads(threads)
    install_signal_handlers()
    if quiet:
        silence_progress_bars()


def execute(name: str, opts: dict, out: Path, todo: list, done: set[str], env: dict, *, jobs: int, threads: int) -> None:
    """Run the points ``todo`` (a point after the points it reads), serially or in ``jobs`` spawned workers."""
    finished = set(done)
    if jobs == 1:
        for p in todo:
            missing = [a for a in p.after if a not in finished]
            if missing:
                raise PrivnluError(f"{p.name} needs {', '.join(missing)} first")
            _report(run_point(name, opts, p.name, str(out), env))
            finished.add(p.name)
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pending, running, failure = list(todo), {}, None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(threads, not env["progress"]))
    try:
        while pending or running:
            ready = [p for p in pending if all(a in finished for a in p.after)] if failure is None else []
            for p in ready[: max(0, jobs - len(running))]:
                pending.remove(p)
                running[pool.submit(run_point, name, opts, p.name, str(out), env)] = p
            if not running:
                if failure is None and pending:
                    raise PrivnluError(f"{pending[0].name} needs {', '.join(pending[0].after)}, which did not run")
                break
            finished_now, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in finished_now:
                p = running.pop(f)
                try:
                    _report(f.result())
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


def _report(result: tuple[str, float, str]) -> None:
    name, seconds, text = result
    say(f"  {name}: {text} ({seconds:.0f} s)")


# -- --list ----------------------------------------------------------------------------------------------------

#: options whose unset default means "the scale's" (huang2020 and xie2022 training recipes)
SCALE_SET = ("epochs", "batch_size", "lrs", "encoder_lrs", "train_limit")


def _shown(dest: str, v, *, scaled: bool) -> str:
    """An option's default as --list shows it."""
    if dest == "repeats":
        return f"{v[1]}" if v[0] == 1 else f"{v[0]}-{v[1]}"
    if isinstance(v, bool):
        return "on" if v else "off"
    if v is None:
        return "(the scale's)" if scaled and dest in SCALE_SET else "(none)"
    return _text(v)


def listing(recipes: dict) -> str:
    """One block per recipe: name, paper and artefact, title, default folder and options with their defaults."""
    from ..experiments import registry

    lines = []
    for r in sorted(recipes.values(), key=lambda r: r.name):
        opts = {k: v for k, v in r.defaults.items()}
        lines.append(f"{r.name}  [{r.paper}, {r.artefact}]  -> {r.folder(opts)}/")
        lines.append(f"    {r.title}")
        shown = [f"{_flag(d)} {_shown(d, v, scaled='scale' in r.defaults)}" for d, v in r.defaults.items()]
        if shown:
            lines.append("    options: " + "; ".join(shown))
    if registry.ALIASES:
        lines.append("deprecated names, accepted until the next release: "
                     + ", ".join(f"{o} (now {n})" for o, n in sorted(registry.ALIASES.items())))
    return "\n".join(lines)
