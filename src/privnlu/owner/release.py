"""Releases: what a data owner hands to someone else, under a scheme of the registry.

* :func:`release_split`: a split's representations encoded under a per-batch scheme (TextHide, DP instance
  encoding, or the identity without privacy) into a shared file (encodings and mixed labels, safetensors, no local
  path) and a key file (mask pool and one-time keys, mode 0600), written together or not at all
  (``privnlu encode``, ``privnlu dp encode``);
* :func:`release_text_file`: a text file privatized with a d_chi scheme on the user's side, streamed
  (``privnlu dchi privatize``).

With a ledger, the release is checked against the owner's budget and recorded as pending in one transaction before
any work; the output's fingerprint is noted before it is moved into place, and the release is committed once it is
there. A failure in between drops the pending record (nothing was written); a crash leaves it pending, counted
against the budget and listed by ``privnlu ledger`` (:mod:`privnlu.schemes.ledger`).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Callable

from ..data import get_task
from ..errors import PrivnluError
from ..io import SECRET_MODE, atomic_path, atomic_paths
from ..mechanisms.release import SharedPayload, hide_dataset
from ..models import load_encoder
from ..models.encoder import public_model_name
from ..rng import SecretGenerator
from ..schemes import DchiScheme, Scheme
from ..schemes.ledger import Ledger, Pending, dataset_hashes, lines_hashes, release_of
from ..training.engine import RunSpec, load_splits, prepare, split_release

Log = Callable[[str], None]


def check_split(task_name: str, split: str) -> None:
    """``split`` is one of the task's splits (checked before any work)."""
    task = get_task(task_name)
    splits = ("train", *task.eval_splits)
    if split not in splits:
        raise PrivnluError(f"unknown split '{split}' for {task.name}; use {' or '.join(splits)}")


def release_split(spec: RunSpec, split: str, out: str | Path, key_out: str | Path, *, encodings: int = 1,
                  batch_size: int = 64, seed: int | None = None, ledger: str | Path | None = None,
                  command: str = "encode", own_files: bool = False, progress: bool = True,
                  refresh_cache: bool = False, log: Log = lambda s: None) -> SharedPayload:
    """Encode ``split`` ``encodings`` times under ``spec.scheme`` (see the module docstring); returns the shared
    payload. ``seed``: EXPERIMENTS ONLY."""
    scheme = spec.scheme
    if scheme.query_privatizer() is not None:
        raise PrivnluError(f"{scheme.name} releases text, not encodings: use privnlu dchi privatize")
    if getattr(scheme, "calibration", "correct") == "paper":
        log("WARNING: --dp-calibration paper is NOT a valid DP guarantee; the release states the epsilon it really has")
    check_split(spec.task, split)
    enc = load_encoder(spec.model, pooling=spec.pooling, device=spec.device)
    spec = replace(spec, train=replace(spec.train, epochs=encodings))  # a release's passes are its "epochs"
    pending = None
    if ledger is not None:  # refuse an over-budget release before any work; else record it as pending
        _, train, evals = load_splits(spec)
        ds = train if split == "train" else evals[split]
        cal = scheme.release_calibration(dim=enc.dim, epochs=encodings)
        record = release_of(scheme, command, f"{spec.task}/{split}", str(out), calibration=cal)
        pending = Ledger.open(ledger).begin(record, dataset_hashes(ds))
    with pending or contextlib.nullcontext():  # an error before the files are in place drops the pending record
        payload, cal = _encode_split(spec, split, out, key_out, enc, encodings=encodings, batch_size=batch_size,
                                     seed=seed, own_files=own_files, progress=progress, refresh_cache=refresh_cache,
                                     pending=pending)
        if pending is not None:
            pending.commit()
    label = f" ({cal.to_json()['label']})" if cal is not None else ""
    log(f"wrote {len(payload.x)} encodings{label} to {out}; key material to {key_out} (mode 0600, keep it private)"
        + (f"; recorded in the ledger {ledger}" if pending is not None else ""))
    return payload


def _encode_split(spec: RunSpec, split: str, out: str | Path, key_out: str | Path, enc, *, encodings: int,
                  batch_size: int, seed: int | None, own_files: bool, progress: bool, refresh_cache: bool,
                  pending: Pending | None) -> tuple[SharedPayload, object]:
    """Encode the split and write the shared file and the key together; the shared file's fingerprint is noted in
    the pending ledger record before the files are moved into place. Returns the payload and the calibration."""
    scheme = spec.scheme
    prep = prepare(spec, progress=progress, refresh_cache=refresh_cache, encoder=enc)
    _, x, y = split_release(prep, split)
    hider = scheme.release_hider(dim=prep.encoder.dim, rng=SecretGenerator(seed, warn=False), epochs=encodings,
                                 public=prep.public_x)
    cal = getattr(hider, "calibration", None)
    meta = {"task": prep.task.name, "split": split, "label_names": list(prep.task.label_names),
            "encoder": public_model_name(prep.encoder), "encoder_fingerprint": prep.encoder.fingerprint,
            "pooling": spec.pooling, "max_length": spec.max_length, "bf16": spec.bf16, "data": "own files" if own_files else "named task", "scheme": scheme.name,
            **({"dp": cal.to_json()} if cal is not None else {})}
    payload, key = hide_dataset(hider, x, y, epochs=encodings, batch_size=batch_size, meta=meta)
    with atomic_paths((out, None), (key_out, SECRET_MODE)) as (out_tmp, key_tmp):  # both or neither
        key.save(key_tmp)
        payload.save(out_tmp)
        if pending is not None:
            pending.note(out_tmp)
    return payload, cal


#: warn when at least this share of the input's tokens is expected to survive (text) or be inverted (token)
NEAR_NO_OP = 0.95
#: truncated lines named one by one before a summary line
MAX_TRUNCATION_LINES = 5


def release_text_file(scheme: Scheme, src: str | Path, out: str | Path, *, model: str | None = None,
                      pooling: str = "cls", max_length: int = 128, hnsw: bool = False, chunk_lines: int = 256,
                      seed: int | None = None, ledger: str | Path | None = None, log: Log = lambda s: None) -> int:
    """Privatize ``src`` (one text per line, UTF-8) with a d_chi scheme into ``out`` (atomically): text for
    ``dchi-text``, an ``.npz`` of noisy vectors for ``dchi-token``/``dchi-sequence``. Returns the texts written."""
    from ..mechanisms.dchi_text import OUTPUT_SUFFIX

    if not isinstance(scheme, DchiScheme):
        raise PrivnluError(f"privnlu dchi privatize runs the d_chi schemes, not {scheme.name}")
    scheme.require("eta")
    src, out = Path(src), Path(out)
    if not src.is_file():
        raise PrivnluError(f"input file {src} not found")
    if src.stat().st_size == 0:
        raise PrivnluError(f"input file {src} is empty: nothing to privatize")
    if out.resolve() == src.resolve():
        raise PrivnluError("--out must differ from the input file")
    suffix = OUTPUT_SUFFIX[scheme.mechanism]
    if out.suffix != suffix:
        raise PrivnluError(f"--out for --scheme {scheme.name} should end in {suffix}")
    pending = None
    if ledger is not None:  # refuse a release over the owner's eta budget before any work; else record it as pending
        from ..data.dataset import check_utf8

        check_utf8(src)  # the ledger hashes the lines as UTF-8 text: one line, not a traceback
        name = Path(model).name if model else "all-MiniLM-L6-v2 (packaged)"
        record = release_of(scheme, "dchi privatize", src.name, str(out), model=name)
        pending = Ledger.open(ledger).begin(record, lines_hashes(src))
    with pending or contextlib.nullcontext():  # an error before the file is in place drops the pending record
        texts = _privatize(scheme, src, out, model=model, pooling=pooling, max_length=max_length, hnsw=hnsw,
                           chunk_lines=chunk_lines, seed=seed, pending=pending, log=log)
        if pending is not None:
            pending.commit()
    log(f"privatized {texts} texts with {scheme.name} at eta = {scheme.eta:g}; wrote {out}"
        + (f"; recorded in the ledger {ledger}" if pending is not None else ""))
    return texts


def _privatize(scheme: Scheme, src: Path, out: Path, *, model: str | None, pooling: str, max_length: int, hnsw: bool,
               chunk_lines: int, seed: int | None, pending: Pending | None, log: Log) -> int:
    """Privatize ``src`` into ``out`` (atomically); the output's fingerprint is noted in the pending ledger record
    before it is moved into place. Returns the texts written."""
    from ..mechanisms.dchi_text import DchiPrivatizer, privatize_file

    priv = DchiPrivatizer.load(eta=scheme.eta, mechanism=scheme.mechanism, model=model, pooling=pooling,
                               rng=SecretGenerator(seed, warn=False), max_length=max_length, hnsw=hnsw)
    if scheme.per_token:  # a token mechanism: some tokens may survive unchanged
        warn_if_near_no_op(priv, src, scheme.eta, log=log)
    shown = [0]

    def warn(line: int, tokens: int) -> None:
        shown[0] += 1
        if shown[0] <= MAX_TRUNCATION_LINES:
            log(f"warning: line {line} has {tokens} tokens; truncated to {max_length - 2} (+[CLS]/[SEP] = "
                f"--max-length {max_length})")

    with atomic_path(out) as staged:
        summary = privatize_file(priv, src, staged, chunk_lines=chunk_lines, on_truncate=warn)
        if pending is not None:
            pending.note(staged)
    if len(summary.truncated) > MAX_TRUNCATION_LINES:
        log(f"warning: {len(summary.truncated)} texts in all were truncated to --max-length {max_length}")
    return summary.texts


def warn_if_near_no_op(priv, src: Path, eta: float, *, lines: int = 200, log: Log = lambda s: None) -> float:
    """Estimate, on the input's first ``lines`` texts, the share of tokens that M_txt leaves unchanged at ``eta``
    (= nearest-neighbour inversion accuracy of M_rep); warn when it is at least :data:`NEAR_NO_OP`. The estimate's
    noise is a fixed public draw, never applied to the data."""
    from ..mechanisms.dchi_stats import token_ids_of, unchanged_share

    with open(src, encoding="utf-8", errors="replace") as fh:
        texts = [t for _, t in zip(range(lines), fh) if t.strip()]
    if not texts:
        return 0.0
    ids = token_ids_of(texts, priv.tokenizer)
    ids = ids[~priv.space.special[ids]]
    if len(ids) == 0:
        return 0.0
    survival = unchanged_share(priv.space, ids, eta, SecretGenerator(0, warn=False))
    if survival >= NEAR_NO_OP:
        log(f"warning: at eta = {eta:g} about {100 * survival:.0f} % of this text's tokens come out unchanged on this "
            "model: the release hides almost nothing; choose eta with `privnlu dchi calibrate`")
    return survival
