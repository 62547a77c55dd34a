"""``privnlu dp account|encode|audit|audit-sgd``: calibrate DP instance encoding and account a ledger, release DP
encodings (Xie & Hong 2022), audit a claimed epsilon empirically, and audit a DP-SGD run in one training run
(Steinke et al. 2023)."""

from __future__ import annotations

import argparse
import sys

from ..params import Option, Range
from .common import DATA, ENCODER, say, scheme_from_args, warn_seed
from .options import add, option, scheme_options

#: the parameters of DP instance encoding, as ``dp account`` and ``dp encode`` take them
DP_IE = ("mechanism", "epsilon", "delta", "clip", "calibration", "k", "noise")


FEATURES = Option("features", "--features", "instead of --task: a safetensors file with tensors 'features' (n x d) "
                  "and 'labels' (n class ids)", metavar="FILE", group="data")
CANARIES = Option("canaries", "--canaries", "canaries m, each in the training set with probability 1/2 (at most "
                  "1,000,000, and as many as half the machine's memory holds)", int,
                  default=1000, range=Range(lo=2, hi=1_000_000, integer=True),  # = privacy_audit.dp_sgd.MAX_CANARIES
                  group="audit")
UNDER_NOISE = Option("under_noise", "--under-noise", "divide the calibrated noise multiplier by FACTOR while the "
                     "record still states the claimed epsilon: a deliberately broken run the audit should catch",
                     float, range=Range(lo=1, hi=1e6), metavar="FACTOR", group="audit")


def _dp_ie(*, k_default: int | None = None) -> list[Option]:
    params = {o.dest: o for o in scheme_options("per-batch")[1:]}
    out = [params[d] for d in DP_IE]
    if k_default is not None:
        out[5] = out[5].but(default=k_default)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    """``dp account``, ``dp encode``, ``dp audit`` and ``dp audit-sgd`` (``sub``: the ``dp`` group's subcommands)."""
    a = sub.add_parser("account", help="noise for an (epsilon, delta) target, and the epsilon the release really has; "
                                       "with --ledger, every recorded release of each dataset composed")
    add(a, *_dp_ie(k_default=4), "encodings_per_example", "dim", "ledger", "budget_epsilon",
        "budget_delta", "budget_eta", "out", Option("json", "--json", "print the raw JSON record instead of the "
                                                    "table", kind="flag"),
        ledger={"help": "compose every release recorded in this ledger, per dataset and example (dp-accounting PLD); "
                        "--dp-epsilon is then not needed", "group": "privacy ledger"},
        out={"help": "also write the calibration as a results JSON (kind 'dp'); default: stdout only"})
    a.set_defaults(func=run_account)

    e = sub.add_parser("encode", help="write DP encodings and mixed labels (key file separately, mode 0600)",
                       description="privnlu encode --scheme dp-ie: clip, mix, add calibrated noise; the masks (--m) "
                                   "add nothing to the guarantee (the paper's Algorithm 1 has none).")
    from .encode import RELEASE, RELEASE_HELP

    add(e, *DATA, *ENCODER, *_dp_ie(), option("m"), *RELEASE, **RELEASE_HELP)
    e.set_defaults(func=run_encode)

    au = sub.add_parser("audit", help="empirical DP audit: a 95 %% lower bound on epsilon from many draws, beside the "
                                      "claim", description="Draw the real mechanism many times on worst-case neighbours "
                        "and bound its epsilon from below with a threshold distinguisher (Clopper-Pearson 95 %). Exit "
                        "code 1 if the bound exceeds the claimed epsilon (the claim is refuted), 0 otherwise.")
    scheme, *params = scheme_options("per-batch", "once")
    add(au, scheme.but(default="dp-ie", help="the claim to audit: dp-ie (default), dchi-token or dchi-text"),
        *[o for o in params if o.dest in DP_IE and o.dest != "k"], "dim", "k", "encodings_per_example", "eta", "model",
        "pairs",
        "target_loss", "draws", "seed", "out",
        dim={"default": None, "range": Range(lo=1, hi=1_048_576, integer=True),  # = privacy_audit.mechanism.MAX_DIM
             "help": "dp-ie: representation width d (default: 64)"},
        k={"default": None, "help": "dp-ie: representations per encoding (default: 1)"},
        encodings_per_example={"default": None, "help": "dp-ie: encodings per example and slot (default: 1)"},
        pairs={"default": None, "help": "d_chi: token pairs audited (default: 3)"},
        target_loss={"default": None, "help": "d_chi: pick pairs whose claim eta * d(x, x') is closest to this "
                                              "(default: 2)"},
        draws={"range": Range(lo=4, hi=100_000_000, integer=True),  # = privacy_audit.mechanism.MAX_DRAWS; memory: below
               "help": "draws per hypothesis; half choose the threshold, half bound epsilon (default: 100000; "
                       "dchi-text: 20000); refused when the audit would need over half the machine's memory"},
        seed={"help": "EXPERIMENTS ONLY: makes the mechanism's noise reproducible"},
        out={"help": "also write the audit as a results JSON (kind 'dp-audit')"})
    au.set_defaults(func=run_audit)

    sg = sub.add_parser("audit-sgd", help="one-run audit of DP-SGD: a 95 %% lower bound on epsilon from canaries in "
                                          "one training run, beside the claim",
                        description="Train one DP-SGD head on a task's frozen representations plus m canaries, each "
                        "included with probability 1/2; guess which were included from the model's loss on them and "
                        "bound epsilon from below (Steinke, Nasr & Jagielski 2023, with delta; 95 %). Exit code 1 if "
                        "the bound exceeds the claimed epsilon (the claim is refuted), 0 otherwise.")
    dp = _dp_sgd()
    add(sg, "task", FEATURES, "data_dir", "train_limit", "model", "pooling", "max_length", "cache_dir", "device",
        dp["epsilon"].but(default=1.0, help="the claimed epsilon of the DP-SGD run (the claim to audit)",
                          group="claim"),
        dp["delta"].but(default=1e-5, help="the claimed delta; at most 1/(n + m), n rows and m canaries",
                        group="claim"),
        dp["clip"].but(group="claim"), dp["accountant"].but(group="claim"), "epochs", "batch_size", "lr", "hidden",
        CANARIES, UNDER_NOISE, "seed", "out", "markdown",
        task={"help": "classification task whose cached frozen train representations the head is trained on (e.g. "
                      "tweets); or --features"},
        train_limit={"default": 2000}, epochs={"default": 10}, lr={"default": 0.01},
        hidden={"default": [128], "help": "head hidden sizes (comma-separated; the audited run's head)"},
        seed={"help": "EXPERIMENTS ONLY: makes the canaries, their inclusion, the model and DP-SGD's noise "
                      "reproducible"},
        out={"help": "also write the audit as a results JSON (kind 'dp-sgd-audit')"},
        markdown={"help": "print the result as a Markdown table to stdout"})
    sg.set_defaults(func=run_audit_sgd)


def _dp_sgd() -> dict[str, Option]:
    """The DP-SGD scheme's declared parameters (epsilon, delta, clip, accountant), by name."""
    from ..schemes import get

    return {o.dest: o for o in get("dp-sgd").options()}


def run_account(args: argparse.Namespace) -> int:
    from ..io import json_text, write_json_atomic

    if args.ledger:
        from ..schemes.ledger import account

        rec, lines = account(args.ledger, budget_epsilon=args.budget_epsilon, budget_delta=args.budget_delta,
                             budget_eta=args.budget_eta, delta=args.delta)
    else:
        from ..errors import require
        from ..version import __version__

        require(args.epsilon is not None, "dp account needs --dp-epsilon (or --ledger FILE to compose recorded releases)")
        scheme = scheme_from_args(args, "dp-ie")
        cal = scheme.calibrate(dim=args.dim, epochs=args.encodings_per_example)
        if not cal.valid and cal.noise_reading != "per-batch":  # per-batch: scheme_from_args said why
            say(f"WARNING: --dp-calibration paper is NOT a valid DP guarantee; this release is only "
                f"({cal.epsilon:.4g}, {cal.delta:g})-DP per example")
        rec, lines = {"kind": "dp", "privnlu": __version__, **cal.to_json()}, []
    if args.out:
        write_json_atomic(args.out, rec)
    if args.json:
        sys.stdout.write(json_text(rec) + "\n")
        for line in lines:
            say(line)
        return 0
    rows = [(k, v) for k, v in rec.items() if k not in ("kind", "privnlu", "provenance", "label")
            and isinstance(v, (str, int, float, bool))]
    table = lines or [str(rec.get("label", "DP instance encoding"))] + [
        f"  {k.replace('_', ' '):<20} {v:.6g}" if isinstance(v, float) else f"  {k.replace('_', ' '):<20} {v}"
        for k, v in rows]
    sys.stdout.write("\n".join(table) + "\n")
    return 0


def run_encode(args: argparse.Namespace) -> int:
    """``privnlu dp encode`` is ``privnlu encode --scheme dp-ie`` with the flags named as in ``dp account``."""
    from ..errors import require
    from .encode import run

    require(args.epsilon is not None, "dp encode needs --dp-epsilon (the release's epsilon per example)")
    args.scheme, args.public, args.public_size = "dp-ie", "wiki", 1
    return run(args, scheme="dp-ie", command="dp encode")


def run_audit(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from ..attacks.privacy_audit.mechanism import audit_claim
    from ..errors import require
    from ..io import write_json_atomic

    from ..schemes import DchiScheme, DPInstanceEncoding, get

    # the claims this audit checks: DP instance encoding's (epsilon, delta) and the d_chi mechanisms' eta
    if args.k is None and issubclass(get(args.scheme), DPInstanceEncoding):
        args.k = 1  # one representation per encoding: the worst case for one example
    scheme = scheme_from_args(args)
    dchi = isinstance(scheme, DchiScheme)
    require(dchi or isinstance(scheme, DPInstanceEncoding), f"scheme {scheme.name} makes no claim to audit")
    require(not dchi or args.eta is not None, f"--scheme {scheme.name} needs --eta")
    require(dchi or args.epsilon is not None, "--scheme dp-ie needs --dp-epsilon (the claim to audit)")
    other = [f for f, v in ((("--dim", args.dim), ("--encodings-per-example", args.encodings_per_example)) if dchi else
                            (("--pairs", args.pairs), ("--target-loss", args.target_loss), ("--model", args.model)))
             if v is not None]
    require(not other, f"dp audit checks one claim per run: --scheme {scheme.name} is a {'d_chi' if dchi else 'DP'} "
            f"claim, and {', '.join(other)} apply to a {'DP' if dchi else 'd_chi'} claim; audit that one in a run of its own")
    warn_seed(args)
    with tqdm(disable=args.quiet, desc="dp audit", unit="draw") as bar:
        rec = audit_claim(scheme, dim=args.dim or 64, epochs=args.encodings_per_example or 1, draws=args.draws,
                          pairs=args.pairs or 3, target_loss=args.target_loss or 2.0, model=args.model, seed=args.seed,
                          progress=bar.update, announce=say)
    if args.out:
        write_json_atomic(args.out, rec)
    for r in rec["results"]:
        what = f" {r['details']['tokens']}" if "tokens" in r.get("details", {}) else ""
        say(f"{r['mechanism']}{what}: eps_lb = {r['eps_lb']:.3f} (95 %), claimed {r['claimed_epsilon']:.4g}, "
            f"{r['draws']} draws per hypothesis, power {r['power']:.2f}: {r['verdict']}")
    return 1 if rec["violated"] else 0


def run_audit_sgd(args: argparse.Namespace) -> int:
    from ..attacks.privacy_audit.dp_sgd import audit_dp_sgd, file_features, markdown, summary, task_features
    from ..errors import require
    from ..io import write_json_atomic
    from ..training.dp_sgd import DPSGDConfig

    require((args.task is None) != (args.features is None), "dp audit-sgd needs exactly one of --task or --features")
    config = DPSGDConfig(epsilon=args.epsilon, delta=args.delta, clip=args.clip, accountant=args.accountant or "prv",
                         epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    warn_seed(args)
    if args.features:
        x, y, classes, source = file_features(args.features)
    else:
        x, y, classes, source = task_features(args.task, train_limit=args.train_limit, data_dir=args.data_dir,
                                              model=args.model, pooling=args.pooling, max_length=args.max_length,
                                              cache_dir=args.cache_dir, device=args.device, progress=not args.quiet)
    rec = audit_dp_sgd(x, y, num_outputs=classes, config=config, canaries=args.canaries, under_noise=args.under_noise,
                       hidden=tuple(args.hidden), seed=args.seed, progress=not args.quiet, source=source)
    if args.out:
        write_json_atomic(args.out, rec)
    if args.markdown:
        sys.stdout.write(markdown(rec) + "\n")
    for line in summary(rec):
        say(line)
    return 0 if rec["consistent"] else 1
