"""d_chi-privacy over a token-embedding space (Feyisetan et al., WSDM 2020; Qu et al., 2021).

Noise
    ``N`` in R^n with density proportional to ``exp(-eta * ||N||)``. In polar
    coordinates the density of the radius is ``r^(n-1) exp(-eta r)``, i.e.
    ``||N|| ~ Gamma(shape=n, scale=1/eta)`` (so ``E||N|| = n / eta``), and the
    direction is uniform on the unit sphere, independent of the radius. We draw
    the direction as a normalised standard Gaussian and the radius by inverse
    CDF, ``r = P^-1(n, U) / eta`` with ``P^-1 = scipy.special.gammaincinv`` and
    ``U`` uniform from the :class:`~privnlu.rng.SecretGenerator` (never the
    global RNG). Simulation on public text (privacy-adaptive pretraining on a
    GPU) may pass a seeded ``torch.Generator`` of the device instead; the radius
    is then ``r = (sum_{j<=n} -log U_j) / eta``, exact for integer ``n``
    (``Gamma(n, 1)`` is a sum of ``n`` unit exponentials). A user's release never
    takes this path. (Drawing the direction *inside* the ball, or the radius as a
    1-d Laplace, would be the known slips; neither is done here.)

Mechanisms (user side; Qu et al. 2021, section 3.1-3.3)
    * ``M_rep(x)_i = phi(x_i) + N_i`` (token representation privatization):
      each regular token's embedding from the user-side table plus fresh noise.
    * ``M_txt(x)_i = argmin_{v in V_regular} ||phi(v) - (phi(x_i) + N_i)||``
      (text-to-text privatization): the nearest regular vocabulary token.
    * ``M_seq(x) = h(x) + N`` (sequence representation privatization) with
      ``N`` in R^d on the sentence representation ``h(x)``.

Special tokens ([CLS], [SEP], [PAD], [UNK], [MASK], [unused*]) are never
privatized (they pass through unchanged) and never chosen as an output of
``M_txt``. Each privatized position is an ``eta``-d_chi release of its token, so
for two token sequences ``x, x'`` of the same length, with the same special
tokens at the same positions, the sequence mechanism satisfies

    P(M(x) in S) <= exp(eta * d(x, x')) P(M(x') in S),
    d(x, x') = sum_i ||phi(x_i) - phi(x'_i)||_2

(composition over positions). For sequences of different length, or different
special-token layouts, ``d = infinity``: length and special-token positions are
revealed. ``M_seq`` is ``eta``-d_chi private with respect to
``d(x, x') = ||h(x) - h(x')||_2``.

Nearest-token search is exact (a chunked matrix product
``||e||^2 - 2 x.e`` over the regular vocabulary) or, optionally, a FAISS HNSW
index, on the CPU or on the device of a :meth:`TokenSpace.to` copy. Any function of the noisy embedding that does not look at the user's
input again (an approximate index included, even one built with its own
randomness) is post-processing and keeps the d_chi guarantee; only utility
changes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy import special

from ..errors import PrivnluError
from ..rng import SecretGenerator

UNUSED_TOKEN = re.compile(r"^\[unused\d+\]$")
DEFAULT_CHUNK = 512


def check_eta(eta: float) -> float:
    """Validate the privacy parameter: a finite positive number."""
    try:
        eta = float(eta)
    except (TypeError, ValueError):
        raise PrivnluError(f"eta must be a positive number, not '{eta}'") from None
    if not (eta > 0 and math.isfinite(eta)):
        raise PrivnluError(f"eta must be a positive finite number, not {eta}")
    return eta


def gamma_radius(u: np.ndarray | torch.Tensor, dim: int, eta: float) -> torch.Tensor:
    """Inverse CDF of Gamma(shape=dim, scale=1/eta) at uniforms ``u`` (float64)."""
    u = u.numpy() if isinstance(u, torch.Tensor) else np.asarray(u)
    return torch.from_numpy(special.gammaincinv(float(dim), u.astype(np.float64)) / eta)


def dchi_noise(count: int, dim: int, eta: float, rng: SecretGenerator | torch.Generator, *,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``count`` i.i.d. draws of the d_chi noise in R^dim, density ~ exp(-eta ||N||). Shape (count, dim), on the
    CPU, or on the device of ``rng`` when it is a ``torch.Generator`` (public-text simulation only)."""
    eta = check_eta(eta)
    if isinstance(rng, torch.Generator):
        return _device_noise(count, dim, eta, rng).to(dtype)
    if count == 0:
        return torch.zeros(0, dim, dtype=dtype)
    g = rng.normal((count, dim), dtype=torch.float64)
    direction = g / g.norm(dim=1, keepdim=True).clamp_min(1e-300)
    radius = gamma_radius(rng.uniform(count, dtype=torch.float64), dim, eta)
    return (direction * radius.unsqueeze(1)).to(dtype)


def _device_noise(count: int, dim: int, eta: float, gen: torch.Generator) -> torch.Tensor:
    """The d_chi noise from a seeded ``torch.Generator`` on its own device, in float64: a normalised Gaussian
    direction and the radius ``Gamma(dim, 1/eta) = (sum of dim draws of -log U) / eta``."""
    g = torch.randn(count, dim, generator=gen, device=gen.device, dtype=torch.float64)
    direction = g / g.norm(dim=1, keepdim=True).clamp_min(1e-300)
    u = torch.rand(count, dim, generator=gen, device=gen.device, dtype=torch.float64).clamp_min(2.0 ** -53)
    return direction * (-torch.log(u).sum(1, keepdim=True) / eta)


def special_token_mask(tokenizer, vocab_size: int) -> torch.Tensor:
    """True for the tokenizer's special tokens and for every ``[unusedN]`` token."""
    mask = torch.zeros(vocab_size, dtype=torch.bool)
    for i in tokenizer.all_special_ids:
        if 0 <= i < vocab_size:
            mask[i] = True
    for tok, i in tokenizer.get_vocab().items():
        if i < vocab_size and UNUSED_TOKEN.match(tok):
            mask[i] = True
    return mask


@dataclass
class TokenSpace:
    """The user-side token-embedding table ``phi`` and the set of regular (privatizable) tokens.

    ``embeddings`` is the full (V, n) table; ``special`` marks tokens that are
    neither privatized nor chosen as outputs.
    """

    embeddings: torch.Tensor
    special: torch.Tensor
    tokens: list[str] | None = None
    regular_ids: torch.Tensor = field(init=False)
    regular: torch.Tensor = field(init=False)  # (V_reg, n) contiguous float32
    regular_sq: torch.Tensor = field(init=False)  # (V_reg,) squared norms

    def __post_init__(self) -> None:
        self.embeddings = self.embeddings.detach().float().cpu().contiguous()
        if self.special.shape != (self.embeddings.shape[0],):
            raise PrivnluError("the special-token mask must have one entry per vocabulary token")
        self.regular_ids = torch.nonzero(~self.special).squeeze(1)
        if len(self.regular_ids) == 0:
            raise PrivnluError("the vocabulary has no regular tokens to privatize")
        self.regular = self.embeddings[self.regular_ids].contiguous()
        self.regular_sq = (self.regular.double() ** 2).sum(1).float()

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    @property
    def vocab_size(self) -> int:
        return int(self.embeddings.shape[0])

    def to(self, device: str | torch.device) -> "TokenSpace":
        """A copy whose tables live on ``device`` (the nearest-token search then runs there); ids and vectors
        passed to it must be on that device too."""
        out = object.__new__(TokenSpace)
        for name in ("embeddings", "special", "regular_ids", "regular", "regular_sq"):
            setattr(out, name, getattr(self, name).to(device))
        out.tokens = self.tokens
        return out

    @classmethod
    def from_model(cls, model: torch.nn.Module, tokenizer) -> "TokenSpace":
        """Take the input word-embedding table of a Hugging Face model (e.g. ``SentenceEncoder.model``)."""
        table = model.get_input_embeddings().weight
        vocab = tokenizer.convert_ids_to_tokens(list(range(table.shape[0])))
        return cls(table, special_token_mask(tokenizer, table.shape[0]), tokens=list(vocab))

    def nearest(self, x: torch.Tensor, *, chunk: int = DEFAULT_CHUNK, index: "HNSWIndex | None" = None) -> torch.Tensor:
        """Vocabulary ids of the nearest regular token (Euclidean) to each row of ``x`` (..., n)."""
        shape = x.shape[:-1]
        flat = x.reshape(-1, self.dim).float()
        if index is not None:
            return index.search(flat).reshape(shape)
        out = torch.empty(flat.shape[0], dtype=torch.long, device=flat.device)
        for s in range(0, flat.shape[0], chunk):
            q = flat[s : s + chunk]
            # ||q - e||^2 = ||q||^2 - 2 q.e + ||e||^2; ||q||^2 is constant per row
            scores = torch.addmm(self.regular_sq.unsqueeze(0), q, self.regular.T, beta=1.0, alpha=-2.0)
            out[s : s + chunk] = scores.argmin(1)
        return self.regular_ids[out].reshape(shape)


class HNSWIndex:
    """Approximate nearest regular token with a FAISS HNSW index (optional; deterministic post-processing)."""

    def __init__(self, space: TokenSpace, *, m: int = 32, ef_construction: int = 80, ef_search: int = 128) -> None:
        import faiss

        self.space = space
        self.index = faiss.IndexHNSWFlat(space.dim, m)
        self.index.hnsw.efConstruction = ef_construction
        self.index.add(space.regular.numpy())
        self.index.hnsw.efSearch = ef_search

    def search(self, x: torch.Tensor) -> torch.Tensor:
        _, idx = self.index.search(np.ascontiguousarray(x.float().numpy()), 1)
        return self.space.regular_ids[torch.from_numpy(idx[:, 0].astype(np.int64))]


def privatized_positions(space: TokenSpace, ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Positions that get noise: regular tokens (not special, not padding)."""
    keep = ~space.special[ids]
    if attention_mask is not None:
        keep &= attention_mask.bool()
    return keep


def m_rep(space: TokenSpace, ids: torch.Tensor, eta: float, rng: SecretGenerator | torch.Generator,
          attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Token representation privatization: ``phi(x_i) + N_i`` at regular positions, ``phi(x_i)`` elsewhere.

    ``ids`` has any shape (...,); the result has shape (..., n).
    """
    eta = check_eta(eta)
    emb = space.embeddings[ids]
    pos = privatized_positions(space, ids, attention_mask)
    emb[pos] += dchi_noise(int(pos.sum()), space.dim, eta, rng)
    return emb


def m_txt(space: TokenSpace, ids: torch.Tensor, eta: float, rng: SecretGenerator | torch.Generator,
          attention_mask: torch.Tensor | None = None, *, index: HNSWIndex | None = None,
          chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """Text-to-text privatization: each regular token -> nearest regular token to its noisy embedding."""
    eta = check_eta(eta)
    out = ids.clone()
    pos = privatized_positions(space, ids, attention_mask)
    if pos.any():
        noisy = space.embeddings[ids[pos]] + dchi_noise(int(pos.sum()), space.dim, eta, rng)
        out[pos] = space.nearest(noisy, chunk=chunk, index=index)
    return out


def m_seq(reps: torch.Tensor, eta: float, rng: SecretGenerator) -> torch.Tensor:
    """Sequence representation privatization: ``h(x) + N`` with ``N`` in R^d, one draw per row of (B, d)."""
    eta = check_eta(eta)
    return reps + dchi_noise(reps.shape[0], reps.shape[-1], eta, rng, dtype=reps.dtype).to(reps.device)


def load_token_space(model: str | Path | None = None) -> tuple[TokenSpace, object]:
    """The (TokenSpace, tokenizer) of a local model folder (default: the packaged MiniLM)."""
    from ..models import load_encoder

    enc = load_encoder(model)
    return TokenSpace.from_model(enc.model, enc.tokenizer), enc.tokenizer
