"""Secret randomness.

Masks, mixing partners, mixing coefficients and noise are secrets. They come
from a :class:`SecretGenerator`, a dedicated generator that never reads or
advances the global NumPy/PyTorch/Python RNG state.

* By default its bits come from the operating system's CSPRNG (``os.urandom``),
  so nothing an observer sees can predict the next draw.
* ``SecretGenerator(seed=...)`` switches to a seeded PCG64 stream for
  reproducible experiments only; it warns loudly, because a seeded stream is a
  key anybody who knows the seed can regenerate.

All draws are derived from uniform 64-bit words, so the secure and the seeded
generator share one code path: uniforms take the top 53 bits, normals are the
inverse normal CDF of a uniform (``ndtri``), other distributions likewise by
inverse CDF, permutations are an argsort of uniforms.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterator

import numpy as np
import torch

SEED_WARNING = (
    "privnlu: a fixed --seed makes every secret (masks, mixing, noise) reproducible by anyone "
    "who knows the seed. Use it for experiments only, never to protect real data."
)

_TWO_POW_53 = float(2**53)


class SecretGenerator:
    """A dedicated source of secret randomness: the OS CSPRNG when ``seed`` is None, else seeded PCG64 (experiments)."""

    def __init__(self, seed: int | None = None, *, warn: bool = True) -> None:
        self.seeded = seed is not None
        self._np = np.random.Generator(np.random.PCG64(seed)) if seed is not None else None
        self._buffer: np.ndarray | None = None  # words read ahead by `batched`, used in order, never twice
        self._pos = 0
        if self.seeded and warn:
            warnings.warn(SEED_WARNING, UserWarning, stacklevel=2)

    def __repr__(self) -> str:  # never reveal state
        return f"SecretGenerator({'seeded, experiments only' if self.seeded else 'os.urandom'})"

    # -- resume (seeded experiments only) --------------------------------
    def experiment_state(self) -> dict | None:
        """The seeded stream's position, for a checkpoint, so that a resumed experiment draws what an uninterrupted
        one would; ``None`` for the secure generator, which has no state to save (and must not have one)."""
        return None if self._np is None else self._np.bit_generator.state

    def restore_experiment_state(self, state: dict | None) -> None:
        """Continue a seeded stream from :meth:`experiment_state`; the secure generator ignores it."""
        if self._np is not None and state is not None:
            self._np.bit_generator.state = state

    # -- raw words -------------------------------------------------------
    def words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit unsigned integers (first from a :meth:`batched` read-ahead, if one is open)."""
        buf = self._buffer
        if buf is None or self._pos >= len(buf):
            return self._fresh(n)
        take = buf[self._pos : self._pos + n].copy()
        buf[self._pos : self._pos + len(take)] = 0  # a used word is wiped at once
        self._pos += len(take)
        return take if len(take) == n else np.concatenate([take, self._fresh(n - len(take))])

    def _fresh(self, n: int) -> np.ndarray:
        if self._np is not None:
            return self._np.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy()

    @contextlib.contextmanager
    def batched(self, n: int) -> Iterator["SecretGenerator"]:
        """Read ``n`` words from the OS CSPRNG in one call now; draws inside the block consume them in order
        (then read fresh ones if more are needed). The words left over are wiped at the end and never used.

        Every draw is still a distinct CSPRNG word, so the distribution of each draw is unchanged; only the number
        of ``os.urandom`` calls drops (one per TextHide batch instead of one per permutation, coefficient matrix and
        mask choice). A seeded generator does not read ahead, so a seeded experiment draws exactly what it drew
        before. A block opened inside another one shares the outer block's words.
        """
        if self._np is not None or self._buffer is not None or n <= 0:
            yield self
            return
        self._buffer, self._pos = self._fresh(n), 0
        try:
            yield self
        finally:
            self._buffer.fill(0)
            self._buffer, self._pos = None, 0

    # -- derived draws ---------------------------------------------------
    def uniform(self, shape: tuple[int, ...] | int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Uniform on the open interval (0, 1), with 53 random bits."""
        shape = _shape(shape)
        n = math.prod(shape)
        u = ((self.words(n) >> np.uint64(11)).astype(np.float64) + 0.5) / _TWO_POW_53
        return torch.from_numpy(u).reshape(shape).to(dtype)

    def normal(self, shape: tuple[int, ...] | int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Standard normal draws, ``ndtri(U)`` with ``U`` uniform on (0, 1)."""
        return torch.special.ndtri(self.uniform(shape, dtype=torch.float64)).to(dtype)

    def signs(self, shape: tuple[int, ...] | int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Independent fair +-1 entries (one random bit each)."""
        shape = _shape(shape)
        n = math.prod(shape)
        raw = self.words((n + 63) // 64)
        bits = np.unpackbits(raw.view(np.uint8))[:n]
        return torch.from_numpy(bits.astype(np.float32) * 2.0 - 1.0).reshape(shape).to(dtype)

    def randint(self, high: int, shape: tuple[int, ...] | int) -> torch.Tensor:
        """Uniform integers in ``[0, high)`` (bias below ``high / 2**64``)."""
        if high <= 0:
            raise ValueError("high must be positive")
        shape = _shape(shape)
        w = self.words(math.prod(shape))
        # Lemire's multiply-shift on the top 32 bits would bias at high > 2**32;
        # the modulo of a 64-bit word has bias < high / 2**64, negligible here.
        return torch.from_numpy((w % np.uint64(high)).astype(np.int64)).reshape(shape)

    def permutation(self, n: int) -> torch.Tensor:
        """A uniformly random permutation of ``range(n)``."""
        keys = self.words(n)
        return torch.from_numpy(np.argsort(keys, kind="stable").astype(np.int64))

    def choice(self, n: int, size: int) -> torch.Tensor:
        """``size`` distinct indices from ``range(n)``."""
        if size > n:
            raise ValueError("cannot choose more items than there are")
        return self.permutation(n)[:size]


def _shape(shape: tuple[int, ...] | int) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def derive_seed(*parts: int) -> int:
    """EXPERIMENTS ONLY: a 63-bit seed derived from (base seed, purpose, step, ...) with NumPy's SeedSequence.

    For public randomness (data order, masking positions, initialisation, dropout) of a seeded run; secrets
    still come from a :class:`SecretGenerator`.
    """
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@contextlib.contextmanager
def seeded_torch(seed: int | None) -> Iterator[None]:
    """Run the block with PyTorch's RNG (CPU, and CUDA once initialised) seeded to ``seed``, restored afterwards.

    ``seed=None`` leaves the RNG alone (an unseeded run). Used for initialisation and dropout, never for secrets.
    """
    if seed is None:
        yield
        return
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
