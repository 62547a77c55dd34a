"""Length-bucketed batching and dynamic padding, shared by every training path that runs the encoder.

One epoch of :func:`bucket_batches` over ``n`` examples with token lengths ``L``:

1. sort the examples by length, breaking ties at random (a random permutation, then a stable sort);
2. cut the sorted order into buckets of ``bucket_batches * batch_size`` consecutive examples (similar lengths);
3. shuffle inside every bucket, concatenate the buckets and cut the result into batches of ``batch_size``
   (a batch straddles at most two neighbouring buckets);
4. a last batch smaller than ``min_size`` (TextHide's ``k``) joins the batch before it, so every example is seen
   exactly once per epoch;
5. shuffle the order of the batches.

Each batch is then padded only to its own longest example (:func:`pad`), so a batch of 13-token sentences costs
about 13 tokens per row, not ``--max-length``. Without lengths (cached features) the same function gives plain
shuffled batches: one random permutation cut into batches (steps 1-3 and 5 are skipped).

The order is *experiment* randomness: it comes from a seeded ``torch.Generator`` (saved in checkpoints so a resumed
run continues the same order), never from a :class:`~privnlu.rng.SecretGenerator`; the secrets of TextHide and
d_chi are drawn elsewhere and only from one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..models.padding import pad  # noqa: F401 (re-exported)

#: Batches per length bucket: larger buckets mix more lengths into each batch (more padding, more randomness).
#: With 10, a batch of 32 is drawn from 320 examples of similar length; padding is 1-4% on 20,000-67,000
#: SST-2-like lengths (tests/unit/training/test_batching.py, benchmarks/bench_finetune.py).
BUCKET_BATCHES = 10


def bucket_batches(
    lengths: Sequence[int] | torch.Tensor | None,
    batch_size: int,
    generator: torch.Generator,
    *,
    n: int | None = None,
    min_size: int = 1,
    bucket_batches: int = BUCKET_BATCHES,
) -> list[torch.Tensor]:
    """One epoch of index batches (see the module docstring); ``lengths=None`` needs ``n`` and does not bucket."""
    if lengths is None:
        if n is None:
            raise ValueError("bucket_batches needs lengths or n")
        order = torch.randperm(n, generator=generator)
    else:
        lens = torch.as_tensor(lengths, dtype=torch.long)
        n = len(lens)
        perm = torch.randperm(n, generator=generator)  # random tie-breaks among equal lengths
        order = perm[torch.sort(lens[perm], stable=True).indices]
        width = max(1, bucket_batches) * batch_size
        parts = [order[s : s + width] for s in range(0, n, width)]
        order = torch.cat([p[torch.randperm(len(p), generator=generator)] for p in parts]) if parts else order
    batches = [order[s : s + batch_size] for s in range(0, n, batch_size)]
    if len(batches) > 1 and len(batches[-1]) < min_size:
        batches[-2:] = [torch.cat(batches[-2:])]
    if batches and len(batches[-1]) < min_size:
        return []
    if lengths is None:  # already a random order
        return batches
    shuffle = torch.randperm(len(batches), generator=generator).tolist()
    return [batches[i] for i in shuffle]


def count_batches(n: int, batch_size: int, min_size: int = 1) -> int:
    """How many batches :func:`bucket_batches` gives per epoch (it does not depend on the lengths)."""
    full, rest = divmod(n, batch_size)
    if rest == 0:
        return full
    if rest >= min_size:
        return full + 1
    return full if full > 0 else 0


def padded_cells(lengths: Sequence[int] | torch.Tensor, batches: Sequence[torch.Tensor]) -> int:
    """Token positions the batches occupy once padded (sum over batches of size x longest length)."""
    lens = torch.as_tensor(lengths, dtype=torch.long)
    return int(sum(len(b) * int(lens[b].max()) for b in batches if len(b)))
