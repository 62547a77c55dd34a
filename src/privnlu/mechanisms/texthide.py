"""(m, k)-TextHide (Huang et al., Findings of EMNLP 2020, Algorithm 1).

For a batch ``X`` of ``b`` sentence representations with (one-hot or scalar)
labels ``Y``, TextHide draws ``k-1`` random permutations ``pi_2..pi_k`` of the
batch (``pi_1`` is the identity), and for every example ``i``

    lambda_i ~ |N(0, I_k)|,  lambda_i <- lambda_i / sum_j lambda_ij
    x~_i = sigma_{s_i} o sum_j lambda_ij X[pi_j(i)]          (mixing, then masking)
    y~_i = sum_j lambda_ij Y[pi_j(i)]

where ``sigma_{s_i}`` is a sign mask in {-1, +1}^d drawn uniformly from a secret
pool of ``m`` masks. ``m = 0`` means no mask and ``m = inf`` a fresh mask per
example; ``(m, k) = (0, 1)`` is the identity.

**TextHide-inter** (Section 3.3) takes ``ceil(k/2)`` components from the private
batch and ``floor(k/2)`` from a public corpus; its label uses the private
components only, renormalised: ``y~_i = sum_{j private} lambda_ij Y[pi_j(i)] /
sum_{j private} lambda_ij``. (The reference code instead gave the public
components the labels of random private examples; privnlu follows the paper.)

All randomness (permutations, public partners, coefficients, mask choices and
the pool itself) comes from a :class:`~privnlu.rng.SecretGenerator` and is fresh
on every call: one-time keys, new each epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from ..params import INF, check_k, m_label, parse_m  # noqa: F401 (check_k, m_label, parse_m: re-exported)
from ..errors import PrivnluError
from ..io import write_secret
from ..rng import SecretGenerator



class MaskPool:
    """A secret pool of ``m`` sign masks in {-1, +1}^d.

    The masks are key material: ``repr`` never shows them, and :meth:`save`
    writes them with file mode 0600.
    """

    def __init__(self, m: float, dim: int, masks: torch.Tensor | None = None) -> None:
        self.m = parse_m(m)
        self.dim = int(dim)
        if masks is not None and (self.m == INF or masks.shape != (int(self.m), dim)):
            raise PrivnluError("mask pool shape does not match (m, d)")
        self._masks = masks

    @classmethod
    def generate(cls, m: float, dim: int, rng: SecretGenerator) -> "MaskPool":
        m = parse_m(m)
        masks = rng.signs((int(m), dim)) if m not in (0, INF) else None
        return cls(m, dim, masks)

    def __repr__(self) -> str:
        return f"MaskPool(m={m_label(self.m)}, d={self.dim}, <secret>)"

    def __len__(self) -> int:
        return 0 if self.m == INF else int(self.m)

    @property
    def masks(self) -> torch.Tensor | None:
        return self._masks

    def draw(self, n: int, rng: SecretGenerator) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Masks for ``n`` examples and the pool indices used (None where not from the pool)."""
        if self.m == 0:
            return None, None
        if self.m == INF:
            return rng.signs((n, self.dim)), None
        idx = rng.randint(int(self.m), n)
        return self._masks[idx], idx  # type: ignore[index]

    def save(self, path: str | Path) -> Path:
        """Write the pool (key material) with mode 0600."""
        return write_secret(path, {"m": m_label(self.m), "dim": self.dim, "masks": self._masks})

    @classmethod
    def load(cls, path: str | Path) -> "MaskPool":
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            return cls(parse_m(blob["m"]), int(blob["dim"]), blob["masks"])
        except PrivnluError:
            raise
        except Exception:
            raise PrivnluError(f"{path}: not a privnlu mask pool file") from None


@dataclass(frozen=True)
class HiddenBatch:
    """The output of TextHide on one batch.

    ``x`` and ``y`` are what may be shared. ``partners``, ``coeffs``, ``public``
    and ``mask_ids`` are the one-time key: never give them to anyone else.
    ``partners[i, j]`` indexes the private batch where ``public[i, j]`` is False
    and the public set where it is True.
    """

    x: torch.Tensor
    y: torch.Tensor
    partners: torch.Tensor = field(repr=False)  # the key fields never appear in repr()/str()
    coeffs: torch.Tensor = field(repr=False)
    public: torch.Tensor = field(repr=False)
    mask_ids: torch.Tensor | None = field(repr=False)


def check_finite(x: torch.Tensor, what: str) -> None:
    """Refuse NaN or infinite inputs: mixed into encodings they would mark exactly the encodings that mix that
    example, revealing who was mixed with whom."""
    if not bool(torch.isfinite(x).all()):
        bad = int((~torch.isfinite(x)).any(dim=-1).sum()) if x.ndim > 1 else 1
        raise PrivnluError(f"the {what} contain NaN or infinite values ({bad} row(s)); TextHide refuses them")


def mixing_coefficients(b: int, k: int, rng: SecretGenerator) -> torch.Tensor:
    """``lambda ~ |N(0, I_k)|`` normalised to sum 1, one row per example (exactly 1 for k = 1)."""
    if k == 1:
        return torch.ones(b, 1)
    lam = rng.normal((b, k)).abs()
    return lam / lam.sum(dim=1, keepdim=True)


def mix(rows: list[torch.Tensor], coeffs: torch.Tensor) -> torch.Tensor:
    """``sum_j coeffs[:, j] * rows[j]``, accumulated in place (no (b, k, d) tensor, one output buffer).

    In-place accumulation is autograd-safe here: no backward formula needs ``out``.
    """
    out = rows[0] * coeffs[:, :1].to(rows[0].dtype)
    for j in range(1, len(rows)):
        out.addcmul_(rows[j], coeffs[:, j : j + 1].to(rows[j].dtype))
    return out


def gather_mix(table: torch.Tensor, index: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``out[i] = sum_j weights[i, j] * table[index[i, j]]`` in one fused gather-and-sum (``embedding_bag``):
    each input row is read once and the output written once, with no gathered copies; differentiable in ``table``
    (joint fine-tuning) and in the same summation order as :func:`mix`."""
    return F.embedding_bag(index.to(table.device), table, per_sample_weights=weights.to(table.dtype), mode="sum")


class TextHide:
    """(m, k)-TextHide, intra- or inter-dataset.

    Args:
        m: pool size (0 = no mask, ``inf`` = a fresh mask per example).
        k: number of representations mixed into each encoding.
        dim: representation width ``d``.
        rng: the secret generator (see :mod:`privnlu.rng`).
        public: for TextHide-inter, representations of a public corpus, shape (N, d).
        pool: an existing :class:`MaskPool` (e.g. loaded from a key file); else one is drawn.
    """

    def __init__(
        self, m: float, k: int, *, dim: int, rng: SecretGenerator, public: torch.Tensor | None = None,
        pool: MaskPool | None = None,
    ) -> None:
        check_k(k)
        self.m = parse_m(m)
        self.k = k
        self.dim = dim
        self.rng = rng
        self.public = public
        if public is not None:
            if k < 2:
                raise PrivnluError("TextHide-inter needs k >= 2 (floor(k/2) public components)")
            if public.ndim != 2 or public.shape[1] != dim or len(public) == 0:
                raise PrivnluError("the public representations must be a non-empty (N, d) matrix")
        self.pool = pool if pool is not None else MaskPool.generate(self.m, dim, rng)
        if self.pool.m != self.m or self.pool.dim != dim:
            raise PrivnluError("the mask pool does not match (m, d)")

    def __repr__(self) -> str:
        return f"TextHide(m={m_label(self.m)}, k={self.k}, {'inter' if self.inter else 'intra'})"

    @property
    def inter(self) -> bool:
        return self.public is not None

    @property
    def n_private(self) -> int:
        return math.ceil(self.k / 2) if self.inter else self.k

    def hide(self, x: torch.Tensor, y: torch.Tensor, *, public: torch.Tensor | None = None) -> HiddenBatch:
        """Algorithm 1 on one batch; ``y`` is (b, c) one-hot/soft labels or (b, 1) scores.

        ``public`` overrides the public representations for this call (joint
        fine-tuning re-encodes a public mini-batch with the current encoder).
        """
        check_finite(x, "representations")  # before any secret is drawn
        public = self.public if public is None else public
        b = x.shape[0]
        check_k(self.n_private, b)
        if x.shape[1] != self.dim:
            raise PrivnluError(f"representations have width {x.shape[1]}, expected {self.dim}")
        k, kp = self.k, self.n_private
        perms, pub_idx, coeffs, masks, mask_ids = self._draw_key(b, len(public) if public is not None and self.inter else None)
        partners = torch.stack(perms, dim=1)
        public_flags = torch.zeros(b, k, dtype=torch.bool)
        coeffs_x = coeffs.to(x.device)
        mixed = gather_mix(x, partners, coeffs_x[:, :kp])
        if pub_idx is not None:
            assert public is not None
            mixed.add_(gather_mix(public.to(device=x.device, dtype=x.dtype), pub_idx, coeffs_x[:, kp:]))
            partners = torch.cat([partners, pub_idx], dim=1)
            public_flags[:, kp:] = True
        # labels: private components only, renormalised (identical to the plain mix when intra)
        priv = coeffs[:, :kp]
        priv = priv / priv.sum(dim=1, keepdim=True)
        y_mixed = mix([y[p.to(y.device)] for p in perms], priv.to(y.device))
        if masks is not None:
            mixed.mul_(masks.to(device=x.device, dtype=x.dtype))
        return HiddenBatch(mixed, y_mixed, partners, coeffs, public_flags, mask_ids)

    def _key_words(self, b: int) -> int:
        """How many 64-bit CSPRNG words one :meth:`hide` call on ``b`` examples draws (see :mod:`privnlu.rng`)."""
        k, kp = self.k, self.n_private
        masks = {0: 0, INF: -(-b * self.dim // 64)}.get(self.m, b)
        return (kp - 1) * b + (k - kp) * b + (b * k if k > 1 else 0) + masks

    def _draw_key(self, b: int, n_public: int | None):
        """The one-time key of a batch, drawn in one read of the secret generator, in Algorithm 1's order:
        permutations pi_2..pi_kp, public partners (inter: ``n_public`` rows to choose from), coefficients lambda,
        mask choices."""
        kp = self.n_private
        with self.rng.batched(self._key_words(b)):
            perms = [torch.arange(b)] + [self.rng.permutation(b) for _ in range(kp - 1)]  # pi_1 = identity
            pub_idx = self.rng.randint(n_public, (b, self.k - kp)) if n_public is not None else None
            coeffs = mixing_coefficients(b, self.k, self.rng)
            masks, mask_ids = self.pool.draw(b, self.rng)
        return perms, pub_idx, coeffs, masks, mask_ids

    def mask_only(self, x: torch.Tensor) -> torch.Tensor:
        """Mask each row with a pool mask and no mixing (the reference code's dev-set encoding)."""
        masks, _ = self.pool.draw(x.shape[0], self.rng)
        return x if masks is None else x * masks.to(device=x.device, dtype=x.dtype)
