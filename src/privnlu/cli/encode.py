"""``privnlu encode``: privatize a dataset's representations for a downstream party."""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..experiments.pipeline import make_hider, prepare, split_release
from ..io import SECRET_MODE, atomic_paths
from ..mechanisms.release import hide_dataset
from ..rng import SecretGenerator
from .common import (add_data_args, add_model_args, add_texthide_args, check_release_paths, positive_int, run_spec, say,
                     warn_seed)

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
    p.add_argument("--epochs", type=positive_int, default=1, help="encode every example this many times, fresh keys each time")
    p.add_argument("--batch-size", type=positive_int, default=64)
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    p.add_argument("--out", required=True, help="shared output file (.pt): encodings and mixed labels")
    p.add_argument("--key-out", required=True, help="key file (.pt, mode 0600): keep it private")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--force", action="store_true", help="replace an existing --key-out file (its release becomes undecodable)")
    p.set_defaults(func=run, **RELEASE_DEFAULTS)


def run(args: argparse.Namespace) -> int:
    warn_seed(args)
    check_release_paths(args.out, args.key_out)
    spec = run_spec(args)
    if spec.scheme == "none":
        spec = replace(spec, scheme="texthide")  # the (0, 1) identity release
    prep = prepare(spec, progress=not args.quiet, refresh_cache=args.refresh_cache)
    ds, x, y = split_release(prep, args.split)
    rng = SecretGenerator(args.seed, warn=False)
    hider = make_hider(spec, prep.encoder.dim, rng, prep.public_x)
    assert hider is not None
    cal = getattr(hider, "calibration", None)
    dp = {"dp": cal.to_json()} if cal else {}
    payload, key = hide_dataset(hider, x, y, epochs=args.epochs, batch_size=args.batch_size,
                                meta={"task": prep.task.name, "split": args.split, "label_names": list(prep.task.label_names),
                                      "encoder": prep.encoder.name, "pooling": spec.pooling, **dp})
    with atomic_paths((args.out, None), (args.key_out, SECRET_MODE)) as (out_tmp, key_tmp):  # both or neither
        key.save(key_tmp)
        payload.save(out_tmp)
    label = f" ({dp['dp']['label']})" if dp else ""
    say(f"wrote {len(payload.x)} encodings{label} to {args.out}; key material to {args.key_out} (mode 0600, keep it private)")
    return 0
