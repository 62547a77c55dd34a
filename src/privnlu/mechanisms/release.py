"""Releasing a whole dataset through TextHide, for a downstream party.

:func:`hide_dataset` runs Algorithm 1 over the dataset for ``epochs`` passes
(fresh one-time keys each pass, batches composed by a secret shuffle). It
returns the two halves separately:

* :class:`SharedPayload`: the encodings and mixed labels, the only thing that
  may leave the data owner (and the only thing an attacker is given);
* :class:`KeyRecord`: the mask pool and every one-time key. Key material: save
  it with :meth:`KeyRecord.save` (mode 0600), never log it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import PrivnluError
from ..io import torch_save_atomic, write_secret
from .texthide import TextHide, m_label


@dataclass(frozen=True)
class SharedPayload:
    """What is shared: encodings ``x`` (N, d), mixed labels ``y`` and public metadata."""

    x: torch.Tensor
    y: torch.Tensor
    meta: dict

    def save(self, path: str | Path) -> Path:
        return torch_save_atomic(path, {"x": self.x, "y": self.y, "meta": self.meta})

    @classmethod
    def load(cls, path: str | Path) -> "SharedPayload":
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            return cls(blob["x"], blob["y"], dict(blob["meta"]))
        except Exception:
            raise PrivnluError(f"{path}: not a privnlu encoding file") from None


@dataclass(frozen=True)
class KeyRecord:
    """The secret side of a release (see the module docstring)."""

    pool: torch.Tensor | None
    partners: torch.Tensor  # (N, k) global indices (private dataset, or public set where `public`)
    coeffs: torch.Tensor  # (N, k)
    public: torch.Tensor  # (N, k) bool
    mask_ids: torch.Tensor | None  # (N,) pool indices, None for m in {0, inf}
    epoch: torch.Tensor  # (N,)
    m: str
    k: int

    def __repr__(self) -> str:
        return f"KeyRecord(m={self.m}, k={self.k}, n={len(self.coeffs)}, <secret>)"

    def save(self, path: str | Path) -> Path:
        return write_secret(path, dict(self.__dict__))

    @classmethod
    def load(cls, path: str | Path) -> "KeyRecord":
        try:
            return cls(**torch.load(path, map_location="cpu", weights_only=True))
        except Exception:
            raise PrivnluError(f"{path}: not a privnlu key file") from None


def hide_dataset(hider: TextHide, x: torch.Tensor, y: torch.Tensor, *, epochs: int = 1, batch_size: int = 64,
                 meta: dict | None = None) -> tuple[SharedPayload, KeyRecord]:
    """Encode every example ``epochs`` times; batches are drawn by a secret shuffle."""
    n = x.shape[0]
    if epochs < 1:
        raise PrivnluError(f"epochs must be >= 1, not {epochs}")
    if hider.n_private > min(batch_size, n):
        raise PrivnluError(f"k = {hider.k} is larger than the batch size {min(batch_size, n)}; use a batch of at least k examples")
    xs, ys, parts, coeffs, pubs, mids, eps = [], [], [], [], [], [], []
    for e in range(epochs):
        order = hider.rng.permutation(n)
        starts = list(range(0, n, batch_size))
        if n - starts[-1] < hider.n_private and len(starts) > 1:
            starts.pop()  # fold a too-small tail into the previous batch
        for s_i, s in enumerate(starts):
            end = starts[s_i + 1] if s_i + 1 < len(starts) else n
            idx = order[s:end]
            hb = hider.hide(x[idx], y[idx])
            glob = torch.where(hb.public, hb.partners, idx[hb.partners.clamp_max(len(idx) - 1)])
            xs.append(hb.x)
            ys.append(hb.y)
            parts.append(glob)
            coeffs.append(hb.coeffs)
            pubs.append(hb.public)
            mids.append(hb.mask_ids)
            eps.append(torch.full((len(idx),), e, dtype=torch.long))
    mask_ids = None if mids[0] is None else torch.cat(mids)
    info = {"m": m_label(hider.m), "k": hider.k, "inter": hider.inter, "epochs": epochs, "n_examples": n, **(meta or {})}
    payload = SharedPayload(torch.cat(xs), torch.cat(ys), info)
    key = KeyRecord(hider.pool.masks, torch.cat(parts), torch.cat(coeffs), torch.cat(pubs), mask_ids, torch.cat(eps),
                    m_label(hider.m), hider.k)
    return payload, key
