"""``privnlu attack search|reconstruct --payload FILE``: an auditor attacks a user's own shared encoding file.

The file is a :class:`~privnlu.mechanisms.release.SharedPayload` written by
``privnlu encode``: encodings, mixed labels and public metadata (m, k, epochs,
task). Only that file is read: never a key file. With no key there is no ground
truth, so the results JSON holds the attacker's answer (per encoding or per
recovered original: the nearest candidate sentence and its cosine), which the
user can compare with their own data.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from ..choices import parse_m
from ..errors import PrivnluError, require
from .common import say, warn_seed

if TYPE_CHECKING:
    from ..mechanisms.release import SharedPayload

#: how many per-item answers the JSON lists (the summary covers all of them)
MAX_LISTED = 1000


def add_user_file_args(p: argparse.ArgumentParser) -> None:
    """``--train-file``/``--dev-file``: attack (or search among) the user's own CSV/TSV/JSONL instead of a packaged task."""
    p.add_argument("--train-file", help="your own train file (.csv, .tsv or .jsonl): the attacked examples and candidates "
                                        "(named by --task, default: the --payload file's task or the file's stem)")
    p.add_argument("--dev-file", help="your own dev file, same columns as --train-file (invert attacks its examples)")
    p.add_argument("--text-col", default="text", help="text column of --train-file (default: text)")
    p.add_argument("--text-pair-col", help="second text column, for sentence-pair tasks")
    p.add_argument("--label-col", default="label", help="label column (default: label)")


def register_attack_files(args: argparse.Namespace) -> None:
    """With --train-file, register the user's files as a classification task named --task (or the file's stem)."""
    from pathlib import Path

    from .common import register_user_files

    if getattr(args, "train_file", None):
        args.task = args.task or Path(args.train_file).stem
        args.regression = False  # attack audits are for classification tasks
        register_user_files(args)


def load_shared(path: str) -> SharedPayload:
    """Load and check a shared encoding file (safetensors). A pickle (a key file, or an old ``.pt`` payload) is
    refused with one line and never unpickled."""
    from pathlib import Path

    import torch

    from ..mechanisms.release import SharedPayload

    require(Path(path).is_file(), f"--payload {path}: no such file")
    try:
        payload = SharedPayload.load(path)
    except PrivnluError as exc:
        raise PrivnluError(f"--payload {exc}") from None
    x, y = payload.x, payload.y
    require(x.ndim == 2 and len(x) > 0, f"--payload {path}: encodings must be a non-empty (N, d) matrix")
    require(len(y) == len(x), f"--payload {path}: {len(x)} encodings but {len(y)} mixed labels")
    require(bool(torch.isfinite(x).all()), f"--payload {path}: encodings contain NaN or infinite values")
    return payload


def _task_and_prep(args: argparse.Namespace, payload: SharedPayload):
    from .attack import _prepare

    args.task = args.task or payload.meta.get("task")
    require(args.task is not None, "--payload: the file names no task; pass --task (the attacker's candidate and auxiliary data)")
    require(payload.meta.get("data") != "own files" or bool(args.train_file),
            f"--payload: the file encodes the owner's own data (task '{args.task}'); pass --train-file/--dev-file with "
            "the attacker's candidate and auxiliary sentences")
    limit = getattr(args, "corpus_limit", None)
    say(f"candidates: the {args.task} training sentences ({'the first ' + str(limit) if limit else 'all of them'}); "
        "their representations are computed once with a progress bar and cached"
        + (" (--corpus-limit N bounds them)" if hasattr(args, "corpus_limit") and not limit else ""))
    _, prep = _prepare(args, train_limit=limit)
    assert prep.train_x is not None
    require(payload.x.shape[1] == prep.train_x.shape[1],
            f"attack data have mismatched dimensions: the payload's encodings are {payload.x.shape[1]}-d, "
            f"the attacker's {prep.task.name} representations {prep.train_x.shape[1]}-d")
    return prep


def _record(args, attack: str, threat, prep, payload: SharedPayload, t0: float, **extra) -> dict:
    from ..version import __version__
    from ..models.encoder import public_model_name

    public = {k: payload.meta.get(k) for k in ("m", "k", "epochs", "n_examples", "inter", "task", "split", "encoder")}
    return {"kind": "attack", "attack": attack, "mode": "payload", "privnlu": __version__, "payload": str(args.payload),
            "payload_meta": public, "task": prep.task.name, "threat_model": threat.to_json(), "encoder": public_model_name(prep.encoder),
            "pooling": prep.encoder.pooling, "n_encodings": len(payload.x), "experiment_seed": args.seed,
            "note": "no ground truth (no key is read): these are the attacker's answers", "seconds": round(time.time() - t0, 2), **extra}


def search_payload(args: argparse.Namespace) -> int:
    """Nearest candidate sentence (cosine, FAISS) for every encoding in the file."""
    from ..attacks.search import SimilaritySearch
    from ..attacks.threat import SEARCH_THREAT, AttackerView, Corpus
    from ..io import write_json_atomic

    warn_seed(args)
    t0 = time.time()
    payload = load_shared(args.payload)
    prep = _task_and_prep(args, payload)
    corpus = Corpus(prep.train.texts_a, prep.train_x)
    view = AttackerView(SEARCH_THREAT, encodings=payload.x.float(),
                        scheme={k: payload.meta[k] for k in ("m", "k") if k in payload.meta}, candidates=corpus)
    res = SimilaritySearch().run(view)
    answers = [{"encoding": i, "sentence": corpus.texts[int(j)], "cosine": round(float(c), 4)}
               for i, (j, c) in enumerate(zip(res.index[:MAX_LISTED], res.cosine[:MAX_LISTED]))]
    rec = _record(args, "search", SEARCH_THREAT, prep, payload, t0, corpus=f"{prep.task.name}/train", corpus_size=len(corpus),
                  mean_cosine=round(float(res.cosine.mean()), 4), answers=answers, answers_listed=len(answers))
    write_json_atomic(args.out, rec)
    say(f"searched {len(payload.x)} encodings; mean cosine to the nearest candidate {rec['mean_cosine']}; wrote {args.out}")
    return 0


def reconstruct_payload(args: argparse.Namespace, methods: tuple[str, ...]) -> int:
    """The Xie & Hong 2021 attack on the file: one recovered vector and nearest sentence per original."""
    import torch

    from ..attacks.reconstruction import ReconstructionAttack
    from ..attacks.threat import RECONSTRUCTION_THREAT, AttackerView, Corpus
    from ..io import write_json_atomic
    from .attack import reconstruction_settings

    warn_seed(args)
    t0 = time.time()
    payload = load_shared(args.payload)
    meta = payload.meta
    for key in ("m", "k", "epochs"):
        require(key in meta, f"--payload {args.payload}: the file does not state '{key}'")
    epochs, k = int(meta["epochs"]), int(meta["k"])
    parse_m(meta["m"])
    require(not meta.get("inter", False), "--payload: the reconstruction attack models TextHide-intra; this file is TextHide-inter")
    require(epochs >= 2, f"too few encodings to cluster: the file encodes each example {epochs} time(s); the attack needs 2 or more (privnlu encode --encodings-per-example 2)")
    methods, config = reconstruction_settings(args, epochs)
    prep = _task_and_prep(args, payload)
    g = torch.Generator().manual_seed(args.seed if args.seed is not None else 0)  # which examples; not a secret
    aux_idx = torch.randperm(len(prep.train), generator=g)[: args.aux_size]
    labels = torch.tensor(prep.train.labels)
    auxiliary = Corpus([prep.train.texts_a[i] for i in aux_idx.tolist()], prep.train_x[aux_idx], labels[aux_idx])
    candidates = Corpus(prep.train.texts_a, prep.train_x)
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=payload.x.float(), mixed_labels=payload.y.float(),
                        scheme={"m": meta["m"], "k": k, "epochs": epochs, "dim": payload.x.shape[1]},
                        auxiliary=auxiliary, candidates=candidates)
    attack = ReconstructionAttack(config, methods)
    results = attack.run(view)
    out = {}
    for r in results:
        xa = torch.nn.functional.normalize(r.recovered.abs(), dim=1)
        ca = torch.nn.functional.normalize(candidates.x[torch.as_tensor(r.sentence_index)].abs().float(), dim=1)
        cos = (xa * ca).sum(1)
        out[r.method] = {"groups": len(r.clusters), "seconds": {k2: round(v, 2) for k2, v in r.seconds.items()},
                         "mean_cosine": round(float(cos.mean()), 4),
                         "answers": [{"group": i, "size": len(c), "sentence": candidates.texts[int(j)], "cosine": round(float(s), 4)}
                                     for i, (c, j, s) in enumerate(zip(r.clusters, r.sentence_index, cos))][:MAX_LISTED]}
    rec = _record(args, "reconstruct", RECONSTRUCTION_THREAT, prep, payload, t0, corpus=f"{prep.task.name}/train",
                  corpus_size=len(candidates), aux_size=len(auxiliary), pair_train_accuracy=attack.pair_train_accuracy,
                  methods=out, config=dict(config.__dict__))
    write_json_atomic(args.out, rec)
    say(f"reconstructed {len(payload.x)} encodings into " + ", ".join(f"{m}: {v['groups']} originals" for m, v in out.items())
        + f"; wrote {args.out}")
    return 0
