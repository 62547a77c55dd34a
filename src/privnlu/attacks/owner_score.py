"""A data owner scores an attack on their own release (``privnlu attack search|reconstruct --payload FILE --key
KEY.pt``).

The attack runs on the shared file alone and answers first; only then is the owner's key read, with the originals
it points to (the first ``n_examples`` rows of the split the file names, as ``privnlu encode`` released them), to
score those answers. The attack never receives the key or the originals.

**Recovered.** A private sentence is recovered when an answer names it (the same text) and the answer is about it:

* search: the answer to an encoding names one of the private sentences that encoding mixes;
* reconstruct: the answer of a group names the group's true original, the private sentence most of its encodings
  mix (Xie & Hong 2021's success, on the sentence).

**Chance line.** The same answers drawn at random among the ``C`` candidates: a private sentence with ``c`` copies
among the candidates, about which ``a`` answers are given, is hit with probability ``1 - (1 - c / C)^a``; the
chance line is the mean of that over the private sentences (in %). The share recovered carries its 95 %
Clopper-Pearson interval over the private sentences, and ``scale`` (the audit's ``on_scale``) puts it on the
advantage over chance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ..errors import PrivnluError, require
from ..io import is_pickle
from ..mechanisms.release import KeyRecord, SharedPayload
from ..stats import clopper_pearson

#: encodings on which a key is checked against its payload, and the share of them it must reproduce
CHECKED, REPRODUCED = 1000, 0.9
#: the audit's advantage over chance: (rate %, its 95 % interval, chance %) -> the fields it adds
Scale = Callable[[float, Sequence[float], float], dict]
METRIC = ("exact sentence: an answer counts for a private sentence its encoding mixes (search) or its group's "
          "majority original (reconstruct); chance: the same answers drawn at random among the candidates")


def check_key_path(key: str | Path, payload: str | Path, out: str | Path | None = None) -> None:
    """Before any work: ``key`` is a key file (a torch.save file, by its first bytes only; it is not read until the
    attack has answered), neither the payload nor the output."""
    path = Path(key)
    require(path.is_file(), f"--key {key}: no such file")
    require(path.resolve() != Path(payload).resolve(), "--key names the --payload file: give the owner's key file")
    require(out is None or path.resolve() != Path(out).resolve(), "--out must differ from --key")
    require(is_pickle(path), f"--key {key}: not a privnlu key file (privnlu encode --key-out writes one)")


def load_truth(key: str | Path, payload: SharedPayload) -> KeyRecord:
    """The owner's key, checked against the payload it must belong to."""
    rec = KeyRecord.load(key)
    meta, n = payload.meta, len(payload.x)
    require(len(rec.coeffs) == n and rec.partners.shape[0] == n,
            f"--key {key} holds the keys of {len(rec.coeffs)} encodings; --payload has {n}: not this file's key")
    require(str(rec.m) == str(meta.get("m")) and int(rec.k) == int(meta.get("k", -1)),
            f"--key {key} is for m = {rec.m}, k = {rec.k}; --payload states m = {meta.get('m')}, k = {meta.get('k')}")
    private = rec.partners[~rec.public]
    n_ex = int(meta.get("n_examples", 0))
    require(len(private) == 0 or int(private.max()) < n_ex,
            f"--key {key} points past the {n_ex} examples --payload encodes: not this file's key")
    return rec


def check_reproduces(key: KeyRecord, payload: SharedPayload, originals: torch.Tensor, name: str | Path) -> None:
    """The key mixes the originals' representations into the payload's encodings up to their signs (the masks): on
    the first :data:`CHECKED` encodings, each key's mix is nearest (absolute values) to its own encoding. Checked for
    a release without noise or public components (else nothing is checked)."""
    if "dp" in payload.meta or bool(key.public.any()) or len(originals) < int(payload.meta.get("n_examples", 0)):
        return
    rows = slice(0, CHECKED)
    mixed = (key.coeffs[rows].unsqueeze(-1).float() * originals.float()[key.partners[rows]]).sum(1).abs()
    d = torch.cdist(mixed, payload.x[rows].float().abs(), compute_mode="donot_use_mm_for_euclid_dist")
    own = d.diagonal()
    share = float((own <= d.min(1).values + 1e-6 * (1 + own)).float().mean())
    require(share >= REPRODUCED, f"--key {name} does not reproduce the encodings of --payload from the originals: "
                                 "not this file's key")


def private_texts(task: str, split: str, n: int, data_dir: str | None = None) -> list[str]:
    """The owner's originals: the first ``n`` sentences of the task's ``split``, as the release encoded them."""
    from ..data import get_task

    try:
        texts = get_task(task).load(split, data_dir).head(n).texts_a
    except PrivnluError as exc:
        raise PrivnluError(f"--key: the originals ({task}/{split}) cannot be read: {exc}") from None
    require(len(texts) == n, f"--key: {task}/{split} has {len(texts)} sentences; the release encodes {n}")
    return list(texts)


def search_truth(key: KeyRecord) -> list[list[int]]:
    """Per encoding: the private sentences it mixes (non-public components with a positive coefficient)."""
    keep = (~key.public) & (key.coeffs > 0)
    return [row[m].tolist() for row, m in zip(key.partners, keep)]


def group_truth(key: KeyRecord, clusters: Sequence[torch.Tensor]) -> list[list[int]]:
    """Per group: its true original, the private sentence most of its encodings mix (``[]`` for an empty group)."""
    keep = ~key.public
    out = []
    for c in clusters:
        c = torch.as_tensor(c, dtype=torch.long)
        parts = key.partners[c][keep[c]]
        out.append([int(torch.bincount(parts).argmax())] if len(parts) else [])
    return out


def score(answers: Sequence[str], truth: Sequence[Sequence[int]], private: Sequence[str],
          candidates: Sequence[str], *, scale: Scale | None = None) -> dict:
    """Score ``answers`` (one named sentence per answer) against ``truth`` (per answer, the private sentences it is
    about) among ``candidates`` (module docstring)."""
    require(len(answers) == len(truth), "one truth per answer")
    m, total = len(private), len(candidates)
    require(m > 0 and total > 0, "nothing to score: no private sentence or no candidate")
    norm = [p.strip() for p in private]
    copies: dict[str, int] = {}
    for c in candidates:
        s = c.strip()
        copies[s] = copies.get(s, 0) + 1
    about = np.zeros(m, dtype=np.int64)
    hit = np.zeros(m, dtype=bool)
    for said, ids in zip(answers, truth):
        said = said.strip()
        for j in ids:
            about[j] += 1
            hit[j] |= said == norm[j]
    c = np.array([copies.get(p, 0) for p in norm], dtype=np.float64)
    chance = 100.0 * float(np.mean(1.0 - (1.0 - c / total) ** about))
    k = int(hit.sum())
    lo, hi = clopper_pearson(k, m)
    rate = 100.0 * k / m
    rec = {"recovered": k, "private_sentences": m, "rate": round(rate, 2),
           "ci95": [round(100.0 * float(lo), 2), round(100.0 * float(hi), 2)], "random_guess": round(chance, 3),
           "candidates": total, "private_in_candidates": int((c > 0).sum()), "metric": METRIC}
    if scale is not None:
        rec.update(scale(rec["rate"], rec["ci95"], chance))
    return rec


def summary(s: dict) -> str:
    """One line a data owner reads."""
    line = (f"{s['recovered']} of the {s['private_sentences']} private sentences were recovered ({s['rate']:.1f} %, "
            f"95 % CI {s['ci95'][0]:.1f} to {s['ci95'][1]:.1f}); a random guess among the {s['candidates']} "
            f"candidates: {s['random_guess']:.2f} %")
    if "advantage" in s:
        lo, hi = s["advantage_ci95"]
        line += (f"; advantage over chance {s['advantage']:.1f} (95 % CI {lo:.1f} to {hi:.1f}"
                 f"{', at chance' if s['at_chance'] else ''})")
    if s["private_in_candidates"] < s["private_sentences"]:
        line += (f"; only {s['private_in_candidates']} of the private sentences are among the candidates, the others "
                 "cannot be named")
    return line
