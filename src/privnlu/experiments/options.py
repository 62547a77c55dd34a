"""The recipe options: every option a recipe takes, declared once (a recipe takes a subset, ``Recipe.defaults``,
and refuses the others). Options shared with other commands come from the catalogue (:data:`privnlu.options.OPTIONS`);
none has a default here: an option not given takes the recipe's default. Torch-free.
"""

from __future__ import annotations

import argparse

from ..choices import SCALE_NAMES
from ..errors import PrivnluError
from ..options import OPTIONS
from ..params import (ETA, EPSILON, NONNEG_INT, POS_INT, SEED, Option, Range, float_list, fmt_number, int_list,
                      m_list, name_list, parse_m)

GROUP = "recipe options (each recipe takes some; --list shows which, and their defaults)"
I = int
RATES = Range(lo=0, lo_open=True, hi=10.0, items=True)


def grid_points(text: str) -> tuple[tuple[float, int], ...]:
    """``M:K,...`` -> ((m, k), ...)."""
    try:
        return tuple((parse_m(m), int(k)) for m, k in (p.split(":") for p in name_list(text)))
    except (ValueError, PrivnluError):
        raise argparse.ArgumentTypeError(f"expected comma-separated M:K points, e.g. 0:1,256:4, not '{text}'") from None


def repeat_range(text: str) -> tuple[int, int]:
    """``N`` (repeats 1 to N) or ``A-B`` (repeats A to B)."""
    try:
        lo, _, hi = text.partition("-")
        first, last = (int(lo), int(hi)) if hi else (1, int(lo))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or A-B, e.g. 5 or 2-9, not '{text}'") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"'{text}': repeats are numbered from 1, first <= last")
    return first, last


def _shared(name: str, **changes) -> Option:
    return OPTIONS[name].but(default=None, group=GROUP, **changes)


def _own(dest: str, flag: str, help: str, parse=None, **kw) -> Option:
    return Option(dest, flag, help, parse, group=GROUP, **kw)


#: every recipe option, in --help order
RECIPE_OPTIONS: tuple[Option, ...] = (
    _own("tasks", "--tasks", "tasks", name_list, metavar="T,..."),
    _shared("task"),
    _own("variants", "--variants", "huang2020-table1: runs of baseline,intra,inter", name_list),
    _shared("mode"),
    _own("scale", "--scale", "budget: quick (2,000 examples, 3 epochs), cpu (20,000 examples, 20 epochs, TextHide "
                             "runs >= 2,000 steps), paper (full data, the paper's encoder lr grid; a GPU run)",
         choices=tuple(sorted(SCALE_NAMES))),
    _own("scale", "--quick", "same as --scale quick", kind="flag", const="quick"),
    _shared("epochs", help="training epochs (overrides the scale's)"),
    _shared("batch_size", help="examples per optimizer step"),
    _own("lrs", "--lrs", "head learning rates to select from (frozen mode)", float_list, range=RATES),
    _own("encoder_lrs", "--encoder-lrs", "encoder learning rates to select from (joint mode)", float_list, range=RATES),
    _shared("train_limit"),
    _shared("model"),
    _own("public", "--public", "public corpus (table1) or corpora (table6) of TextHide-inter", name_list),
    _own("m_grid", "--ms", "pool sizes m", m_list, metavar="M,...",
         range=Range(lo=0, integer=True, inf_ok=True, items=True, note="0 = no mask")),
    _own("ks", "--ks", "mixing sizes k", int_list, range=Range(lo=0, integer=True, items=True,
                                                                  note="huang2020-table2: 0 = no TextHide")),
    _own("grid_points", "--points", "huang2020-figure2: these (m, k) points instead of --ms x --ks", grid_points,
         metavar="M:K,..."),
    _own("repeats", "--repeats", "run every point N times (or repeats A to B); repeat r > 1 is file <name>-rR",
         repeat_range, metavar="N|A-B"),
    _own("masked", "--masked", "add TextHide's (16, 4) sign masks to DP-IE", kind="flag", const=True),
    _own("noisy_queries", "--noisy-queries", "noise dev queries too", kind="flag", const=True),
    _own("epsilons", "--dp-epsilons", "epsilons", float_list, range=Range(lo=0, lo_open=True, hi=EPSILON.hi, items=True)),
    _own("mechanisms", "--dp-mechanisms", "gaussian,laplace", name_list),
    _own("calibrations", "--dp-calibrations", "correct,paper", name_list),
    _own("victim", "--victim", "gradient attack victim", choices=("hidden", "input")),
    _own("dims", "--dims", "masked layer widths d", int_list, range=Range(lo=1, integer=True, items=True)),
    _own("trials", "--trials", "attacks per (d, k) cell", I, range=POS_INT),
    _own("iterations", "--iterations", "L-BFGS iterations per attack", I, range=POS_INT),
    _own("source", "--source", "the results folder this recipe reads (default: its recipe's)", metavar="DIR"),
    _own("queries", "--queries", "attacked examples", I, range=POS_INT),
    _shared("pooling", choices=("cls", "pooler", "mean")),
    _own("sbert", "--sbert", "add the SBERT cosine metric", kind="flag", const=True),
    _own("sbert", "--no-sbert", "skip the SBERT cosine metric", kind="flag", const=False),
    _own("etas", "--etas", "etas", float_list, range=Range(lo=0, lo_open=True, hi=ETA.hi, items=True)),
    _own("top_etas", "--top-etas", "qu2021-table1-2: etas of the top-outputs table (one record each)", float_list,
         range=Range(lo=0, lo_open=True, hi=ETA.hi, items=True)),
    _own("tokens", "--tokens", "'vocab' (uniform regular tokens) or a task whose dev tokens are used"),
    _own("sample", "--sample", "a uniform sample of N regular tokens (default: all)", I, range=POS_INT),
    _shared("draws", help="draws per token"),
    _own("max_tokens", "--max-tokens", "use only the first N tokens", I, range=POS_INT),
    _own("target", "--target", "target inversion accuracy", float, range=Range(lo=0, hi=1, lo_open=True, hi_open=True)),
    _own("seeds", "--seeds", "experiment seeds, one point each", int_list,
         range=Range(lo=SEED.lo, hi=SEED.hi, integer=True, items=True)),
    _own("conditions", "--conditions", "M:K conditions", name_list),
    _own("methods", "--methods", "clustering methods", name_list),
    _own("nmf_repair_iters", "--nmf-repair-iters", "nmf iterations after duplicate groups are re-seeded", I,
         range=Range(lo=0, integer=True, note="0 = no repair")),
    _own("repair", "--repair", "nmf repair schedules: ROUNDS x ITERATIONS", name_list, metavar="RxI,..."),
    _own("encoders", "--encoders", "transformer,bilstm", name_list),
    _own("modes", "--modes", "fine-tuning schemes: null,sequence,token,text", name_list),
    _own("objectives", "--objectives", "qu2021-table6-7: MLM objectives of the pretraining curves "
         "(vanilla,probability,denoising)", name_list),
    _own("max_steps", "--max-steps", "qu2021-table6-7: the pretraining curves up to this many steps in all "
         "(default: the whole curve)", I, range=POS_INT),
    _own("steps", "--steps", "qu2021-table6-gpu: privatized adaptation steps of each pretraining stage", I,
         range=POS_INT),
    _own("n", "--n", "private examples", int_list, range=Range(lo=1, integer=True, items=True)),
    _own("graph", "--graph", "k-NN graph neighbours per encoding", int_list,
         range=Range(lo=0, integer=True, items=True, note="0 = all pairs")),
    _own("batch_sizes", "--batch-sizes", "client batch sizes", int_list, range=Range(lo=1, integer=True, items=True)),
    _own("span_trials", "--span-trials", "messages per batch size also given the span test", I, range=NONNEG_INT),
    _own("budget", "--budget", "gradient evaluations of the sentence-linking search", I, range=POS_INT),
    _own("schemes", "--schemes", "none and/or texthide", name_list),
    _own("pair_data", "--pair-data", "xie2021-table1-paper-method: the pair network's training data, the attacker's "
         "disjoint auxiliary set or a sample of the private distribution (the paper's threat model)",
         choices=("auxiliary", "private-distribution")),
    _own("mask_repeats", "--mask-repeats", "huang2020-query-inference: one-mask predictions of the dev set, repeated",
         I, range=Range(lo=2, integer=True, note="label changes are counted between repetitions")),
    _own("samples", "--samples", "huang2020-query-inference: fresh masks averaged per query", I,
         range=Range(lo=2, integer=True, note="one mask is the repeated one-mask inference")),
    _shared("seed"),
)

#: dest -> its options (two for a dest set by more than one flag: --scale/--quick, --sbert/--no-sbert)
BY_DEST: dict[str, list[Option]] = {}
for _o in RECIPE_OPTIONS:
    BY_DEST.setdefault(_o.dest, []).append(_o)


def flag(dest: str) -> str:
    """The flag that sets ``dest`` (``--sbert/--no-sbert`` for a pair of flags)."""
    opts = BY_DEST.get(dest)
    if not opts:
        return "--" + dest.replace("_", "-")
    if dest == "sbert":
        return "/".join(o.flags[0] for o in opts)
    return opts[0].flags[0]


def spelled(dest: str, value) -> list[str]:
    """The words that give ``dest`` the value ``value`` on the command line."""
    if dest == "repeats":
        return ["--repeats", str(value[1]) if value[0] == 1 else f"{value[0]}-{value[1]}"]
    if dest == "sbert":
        return ["--sbert" if value else "--no-sbert"]
    if isinstance(value, bool):
        return [flag(dest)] if value else []
    return [flag(dest), text(value)]


def text(v) -> str:
    """An option value as the command line spells it."""
    if isinstance(v, (list, tuple)):
        if v and isinstance(v[0], (list, tuple)):  # M:K points
            return ",".join(f"{text(m)}:{text(k)}" for m, k in v)
        return ",".join(text(x) for x in v)
    if isinstance(v, float):
        return "inf" if v == float("inf") else fmt_number(v)
    return str(v)
