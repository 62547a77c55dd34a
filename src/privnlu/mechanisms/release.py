"""Releasing a whole dataset through TextHide, for a downstream party.

:func:`hide_dataset` runs Algorithm 1 over the dataset for ``epochs`` passes
(fresh one-time keys each pass, batches composed by a secret shuffle), then
shuffles the whole release with the same secure generator, so that the row order
reveals neither the epoch nor the batch an encoding came from. It returns the two
halves separately (row ``i`` of the key belongs to row ``i`` of the payload):

* :class:`SharedPayload`: the encodings and mixed labels, the only thing that
  may leave the data owner (and the only thing an attacker is given). It is
  written as safetensors (tensors ``x``, ``y``) with the public metadata as JSON
  in the safetensors header: a file read from another party is never unpickled;
* :class:`KeyRecord`: the mask pool and every one-time key. Key material: save
  it with :meth:`KeyRecord.save` (mode 0600), never log it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import PrivnluError
from ..io import is_pickle, write_atomic, write_secret
from ..schemas import check_payload
from .texthide import TextHide, m_label

#: the safetensors header key holding the payload's JSON metadata
META_KEY = "privnlu_meta"
PICKLE_REFUSED = ("is a pickle (torch.save) file, e.g. a key file or an older .pt payload; privnlu reads shared "
                  "encodings only as safetensors and never unpickles another party's file: re-encode with privnlu encode")


@dataclass(frozen=True)
class SharedPayload:
    """What is shared: encodings ``x`` (N, d), mixed labels ``y`` and public metadata."""

    x: torch.Tensor
    y: torch.Tensor
    meta: dict

    def save(self, path: str | Path) -> Path:
        """Write safetensors: tensors ``x``, ``y``; the metadata as JSON under :data:`META_KEY` in the header."""
        from safetensors.torch import save_file

        tensors = {"x": self.x.detach().cpu().contiguous(), "y": self.y.detach().cpu().contiguous()}
        meta = {META_KEY: json.dumps(self.meta, sort_keys=True)}
        return write_atomic(path, lambda p: save_file(tensors, str(p), metadata=meta))

    @classmethod
    def load(cls, path: str | Path) -> "SharedPayload":
        """Read a safetensors payload, validated (:mod:`privnlu.schemas.payload`) before it is returned; a pickle is
        refused (:data:`PICKLE_REFUSED`), never loaded."""
        from safetensors import safe_open

        path = Path(path)
        if not path.is_file():
            raise PrivnluError(f"{path}: no such file")
        if is_pickle(path):
            raise PrivnluError(f"{path} {PICKLE_REFUSED}")
        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                meta = json.loads((f.metadata() or {})[META_KEY])
                x, y = f.get_tensor("x"), f.get_tensor("y")
        except Exception:
            raise PrivnluError(f"{path}: not a privnlu encoding file") from None
        if not isinstance(meta, dict):
            raise PrivnluError(f"{path}: not a privnlu encoding file (metadata is not a JSON object)")
        checked = check_payload(meta, x, y, file=path)  # types, ranges, shapes against the metadata, finiteness
        check_dp_claim(checked, path)
        return cls(x, y, meta)


#: the names a DP instance encoding payload's ``scheme`` field has carried (``dp`` before the scheme registry)
DP_IE_PAYLOADS = ("dp-ie", "dp")


def check_dp_claim(meta, file: object) -> None:
    """Refuse a payload's ``dp`` block (or a DP instance encoding payload without one) whose epsilon its own
    mechanism, over at least the encodings per example the payload's ``k`` and ``epochs`` make, does not give
    (:func:`privnlu.mechanisms.dp_claim.verify_dp_ie`)."""
    from .dp_claim import least_participations, verify_dp_ie

    if meta.dp is None:
        if meta.scheme in DP_IE_PAYLOADS:
            raise PrivnluError(f"{file}: a DP instance encoding payload without its calibration (field 'dp'): its "
                               "guarantee cannot be checked")
        return
    verify_dp_ie(meta.dp, where=f"{file}: field 'dp'", least=least_participations(meta.k, meta.epochs, meta.inter))


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
    # one secret shuffle of the whole release: the file order reveals no epoch or batch structure
    perm = hider.rng.permutation(sum(len(e) for e in eps))
    mask_ids = None if mids[0] is None else torch.cat(mids)[perm]
    info = {"m": m_label(hider.m), "k": hider.k, "inter": hider.inter, "epochs": epochs, "n_examples": n,
            "order": "shuffled", **(meta or {})}
    payload = SharedPayload(torch.cat(xs)[perm], torch.cat(ys)[perm], info)
    key = KeyRecord(hider.pool.masks, torch.cat(parts)[perm], torch.cat(coeffs)[perm], torch.cat(pubs)[perm], mask_ids,
                    torch.cat(eps)[perm], m_label(hider.m), hider.k)
    return payload, key
