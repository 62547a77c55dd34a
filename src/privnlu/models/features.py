"""Batched feature extraction with an on-disk cache.

Sentences are sorted by token length and padded per batch, so short sentences
do not pay for long ones; the result is returned in the original order. The
forward pass runs under ``torch.inference_mode``; ``bf16=True`` runs it under
CPU/GPU autocast to bfloat16 (:mod:`.precision`).

The cache stores one file per (model, task, split, max length, pooling,
precision). Each file records a fingerprint of the model weights and of the
texts and labels it was computed from, and a checksum of the features: when the
data changed (a user edited their CSV) the features are recomputed with a one-line
notice; a corrupt file is refused with a clear message. Neither is ever silently used.
"""

from __future__ import annotations

import hashlib
import os
import time
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ..data.dataset import TextDataset
from ..errors import PrivnluError
from ..io import torch_save_atomic
from .encoder import SentenceEncoder, json_key
from .precision import autocast as bf16_autocast

CACHE_VERSION = 1


def default_cache_dir() -> Path:
    return Path(os.environ.get("PRIVNLU_CACHE", Path.home() / ".cache" / "privnlu")) / "features"


def data_fingerprint(ds: TextDataset) -> str:
    h = hashlib.sha256()
    for i in range(len(ds)):
        h.update(ds.texts_a[i].encode())
        h.update(b"\x1f")
        if ds.texts_b is not None:
            h.update(ds.texts_b[i].encode())
        h.update(b"\x1e" + repr(ds.labels[i]).encode() + b"\x1d")
    return h.hexdigest()


@torch.inference_mode()
def extract_features(
    encoder: SentenceEncoder,
    texts_a: list[str],
    texts_b: list[str] | None = None,
    *,
    max_length: int = 128,
    batch_size: int = 64,
    bf16: bool = False,
    progress: bool = True,
    desc: str = "encoding",
) -> torch.Tensor:
    """``h(x)`` for every text (pair), float32, shape ``(n, d)``, in input order."""
    n = len(texts_a)
    enc = encoder.tokenizer(texts_a, texts_b, truncation=True, max_length=max_length, padding=False)
    ids = enc["input_ids"]
    types = enc.get("token_type_ids")
    order = sorted(range(n), key=lambda i: len(ids[i]))
    out = torch.empty(n, encoder.dim, dtype=torch.float32)
    device = encoder.device
    was_training = encoder.training
    encoder.eval()
    pad = encoder.tokenizer.pad_token_id or 0
    starts = range(0, n, batch_size)
    work = [len(order[b : b + batch_size]) * max(len(ids[i]) for i in order[b : b + batch_size]) for b in starts]
    clock = Projection(sum(work), desc, n) if progress else None
    with tqdm(total=n, desc=desc, unit="sent", disable=not progress, leave=False) as bar, bf16_autocast(device, bf16):
        for b, start in enumerate(starts):
            idx = order[start : start + batch_size]
            width = max(len(ids[i]) for i in idx)
            input_ids = torch.full((len(idx), width), pad, dtype=torch.long)
            attn = torch.zeros((len(idx), width), dtype=torch.long)
            tt = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                L = len(ids[i])
                input_ids[r, :L] = torch.tensor(ids[i])
                attn[r, :L] = 1
                if types is not None:
                    tt[r, :L] = torch.tensor(types[i])
            h = encoder(input_ids.to(device), attn.to(device), tt.to(device))
            out[torch.tensor(idx)] = h.float().cpu()
            bar.update(len(idx))
            if clock is not None:
                clock.advance(work[b])
    encoder.train(was_training)
    return out


#: a stage whose projected time passes this many seconds says so once, early
ANNOUNCE_AFTER = 60.0


class Projection:
    """Projects a stage's time from its first seconds of work and, when it will take over :data:`ANNOUNCE_AFTER`
    seconds, says so once on stderr. Work is counted in padded tokens (rows x width of each batch), so that a
    stage that starts with its shortest inputs is not projected short."""

    def __init__(self, total_work: float, desc: str, items: int, *, after: float = 2.0) -> None:
        self.total, self.desc, self.items, self.after = total_work, desc, items, after
        self.done, self.t0, self.said = 0.0, time.perf_counter(), False

    def advance(self, work: float) -> None:
        self.done += work
        elapsed = time.perf_counter() - self.t0
        if self.said or elapsed < self.after or self.done <= 0:
            return
        self.said = True
        projected = elapsed * self.total / self.done
        if projected > ANNOUNCE_AFTER:
            tqdm.write(f"privnlu: {self.desc}: {self.items:,} sentences, about {projected / 60:.0f} minute(s) on this "
                       "machine (projected from the first seconds)", file=sys.stderr)


@dataclass(frozen=True)
class CachedFeatures:
    features: torch.Tensor
    labels: torch.Tensor
    path: Path | None


class FeatureCache:
    """Features keyed by model, task, split, max length, pooling and precision."""

    def __init__(self, root: str | Path | None = None, *, refresh: bool = False) -> None:
        self.root = Path(root) if root else default_cache_dir()
        self.refresh = refresh

    def key(self, encoder: SentenceEncoder, ds: TextDataset, *, max_length: int, bf16: bool) -> dict:
        return {
            "version": CACHE_VERSION,
            "model": encoder.fingerprint,
            "task": ds.name,
            "split": ds.split,
            "n": len(ds),
            "max_length": max_length,
            "pooling": encoder.pooling,
            "precision": "bf16" if bf16 else "fp32",
        }

    def path_for(self, key: dict) -> Path:
        tag = f"{key['task']}-{key['split']}-n{key['n']}-{key['pooling']}-L{key['max_length']}-{key['precision']}"
        return self.root / f"{tag}-{json_key(key)[:16]}.pt"

    def load(self, path: Path, key: dict, fingerprint: str) -> CachedFeatures | None:
        if not path.exists() or self.refresh:
            return None
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            feats, labels, meta = blob["features"], blob["labels"], blob["meta"]
        except Exception:
            raise PrivnluError(f"feature cache {path} is corrupt; delete it or pass --refresh-cache") from None
        if meta.get("key") != key or meta.get("data") != fingerprint:
            sys.stderr.write(f"privnlu: the {key['task']}/{key['split']} data changed since its features were cached; "
                             "recomputing them\n")
            return None
        if meta.get("checksum") != _checksum(feats):
            raise PrivnluError(f"feature cache {path} is corrupt (checksum mismatch); delete it or pass --refresh-cache")
        return CachedFeatures(feats, labels, path)

    def get(
        self, encoder: SentenceEncoder, ds: TextDataset, *, max_length: int = 128, batch_size: int = 64,
        bf16: bool = False, progress: bool = True,
    ) -> CachedFeatures:
        """Cached features for ``ds``, computing and storing them on a miss."""
        key = self.key(encoder, ds, max_length=max_length, bf16=bf16)
        path = self.path_for(key)
        fp = data_fingerprint(ds)
        hit = self.load(path, key, fp)
        if hit is not None:
            return hit
        feats = extract_features(
            encoder, ds.texts_a, ds.texts_b, max_length=max_length, batch_size=batch_size, bf16=bf16,
            progress=progress, desc=f"encoding {ds.name}/{ds.split}",
        )
        labels = torch.tensor(ds.labels, dtype=torch.float32 if ds.is_regression else torch.long)
        blob = {"features": feats, "labels": labels, "meta": {"key": key, "data": fp, "checksum": _checksum(feats)}}
        torch_save_atomic(path, blob)
        return CachedFeatures(feats, labels, path)


def _checksum(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()
