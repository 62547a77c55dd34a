"""``privnlu encode``: privatize a dataset's representations for a downstream party."""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..errors import PrivnluError
from .common import add_data_args, add_model_args, add_texthide_args, positive_int, run_spec, say, warn_seed

# the training settings a release never uses, fixed so that the shared pipeline's RunSpec can be built
RELEASE_DEFAULTS = dict(scheme="texthide", mode="frozen", lr=1.0, encoder_lr=2e-5, weight_decay=0.0, hidden=None,
                        eval_mask="pool")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="write TextHide encodings and mixed labels for a downstream party",
                       description="Encode a split with (m, k)-TextHide. The shared file holds only encodings and mixed "
                                   "labels; the key file (mask pool and one-time keys) is written separately, mode 0600.")
    add_data_args(p)
    add_model_args(p)
    add_texthide_args(p)
    p.add_argument("--split", default="train", help="which split to encode (default: train)")
    p.add_argument("--encodings-per-example", type=positive_int, default=1,
                   help="encode every example this many times, fresh keys each time (default: 1)")
    p.add_argument("--batch-size", type=positive_int, default=64)
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    p.add_argument("--out", required=True,
                   help="shared output file (safetensors, e.g. enc.safetensors): encodings and mixed labels")
    p.add_argument("--key-out", required=True, help="key file (.pt, mode 0600): keep it private")
    add_ledger_arg(p)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--force", action="store_true", help="replace existing --out and --key-out files (a replaced key leaves its release undecodable)")
    p.set_defaults(func=run, **RELEASE_DEFAULTS)


def add_ledger_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ledger", metavar="FILE",
                   help="privacy ledger kept beside the key (JSON, 0600): the release is checked against the owner's "
                        "budget before any work (refused if it would exceed it) and recorded once written "
                        "(see privnlu dp account --ledger)")


def check_split(task_name: str, split: str) -> None:
    """``--split`` must name one of the task's splits (checked before any work)."""
    from ..data import get_task

    task = get_task(task_name)
    splits = ("train", *task.eval_splits)
    if split not in splits:
        raise PrivnluError(f"unknown split '{split}' for {task.name}; use {' or '.join(splits)}")


def run(args: argparse.Namespace) -> int:
    from ..training.engine import load_splits, make_hider, prepare, split_release
    from ..io import SECRET_MODE, atomic_paths
    from ..mechanisms.release import hide_dataset
    from ..mechanisms.texthide import m_label
    from ..models import load_encoder
    from ..models.encoder import public_model_name
    from ..rng import SecretGenerator

    warn_seed(args)
    # a release's "epochs" are its encodings of each example: the DP calibration accounts every one of them
    spec = run_spec(argparse.Namespace(**{**vars(args), "epochs": args.encodings_per_example}))
    if spec.scheme == "none":
        spec = replace(spec, scheme="texthide")  # the (0, 1) identity release
    check_split(spec.task, args.split)
    ledger = release = hashes = None
    enc = load_encoder(spec.model, pooling=spec.pooling, device=spec.device)
    if getattr(args, "ledger", None):  # refuse an over-budget release before any work
        from .. import ledger as L

        cal = spec.dp.calibrate(dim=enc.dim, k=spec.k, epochs=args.encodings_per_example, inter=spec.inter) if spec.dp is not None else None
        _, train, evals = load_splits(spec)
        ds = train if args.split == "train" else evals[args.split]
        ledger, hashes = L.Ledger.open(args.ledger), L.dataset_hashes(ds)
        name, cmd = f"{spec.task}/{args.split}", getattr(args, "ledger_command", "encode")
        release = (L.dp_release(cmd, name, cal, str(args.out)) if cal is not None else
                   L.texthide_release(cmd, name, m_label(spec.m), spec.k, str(args.out)))
        ledger.check(release, hashes)
    prep = prepare(spec, progress=not args.quiet, refresh_cache=args.refresh_cache, encoder=enc)
    ds, x, y = split_release(prep, args.split)
    rng = SecretGenerator(args.seed, warn=False)
    hider = make_hider(spec, prep.encoder.dim, rng, prep.public_x)
    assert hider is not None
    cal = getattr(hider, "calibration", None)
    dp = {"dp": cal.to_json()} if cal else {}
    payload, key = hide_dataset(hider, x, y, epochs=args.encodings_per_example, batch_size=args.batch_size,
                                meta={"task": prep.task.name, "split": args.split, "label_names": list(prep.task.label_names),
                                      "encoder": public_model_name(prep.encoder), "encoder_fingerprint": prep.encoder.fingerprint,
                                      "pooling": spec.pooling, "data": "own files" if args.train_file else "named task", **dp})
    with atomic_paths((args.out, None), (args.key_out, SECRET_MODE)) as (out_tmp, key_tmp):  # both or neither
        key.save(key_tmp)
        payload.save(out_tmp)
    if ledger is not None:
        ledger.record(release, hashes)
    label = f" ({dp['dp']['label']})" if dp else ""
    say(f"wrote {len(payload.x)} encodings{label} to {args.out}; key material to {args.key_out} (mode 0600, keep it private)"
        + (f"; recorded in the ledger {args.ledger}" if ledger is not None else ""))
    return 0
