"""Client data: each client's shard of the training set and its representations.

Client ``c`` of ``C`` holds a contiguous shard of the (optionally limited)
training split (``numpy.array_split`` of the indices, so shard sizes differ by
at most one). In a real deployment every SuperNode loads only its own shard;
in the simulation the same code runs once per virtual client.

Frozen mode reads the shard's cached features (:class:`~privnlu.models.FeatureCache`);
joint mode tokenises the shard and encodes each batch with gradients.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from ..data import TextDataset, get_task
from ..errors import PrivnluError
from ..models import FeatureCache
from ..models.encoder import SentenceEncoder
from ..training import targets_from_labels
from .config import FederatedConfig
from .model import num_outputs


@dataclass
class ClientData:
    """``represent(idx)`` -> representations of shard rows ``idx``; ``targets`` one-hot rows (or scores)."""

    represent: Callable[[torch.Tensor], torch.Tensor]
    targets: torch.Tensor
    texts: list[str]
    tokens: dict[str, torch.Tensor] | None = None  # joint mode: the shard's tokenisation (input_ids, attention_mask)

    def __len__(self) -> int:
        return int(self.targets.shape[0])


def shard_indices(n: int, clients: int, partition: int) -> np.ndarray:
    """Rows of client ``partition`` (contiguous, near-equal shards)."""
    if not 0 <= partition < clients:
        raise PrivnluError(f"partition id {partition} is outside 0..{clients - 1}")
    idx = np.array_split(np.arange(n), clients)[partition]
    if len(idx) == 0:
        raise PrivnluError(f"client {partition}'s data shard is empty: {n} training examples for {clients} clients; "
                           "use fewer clients or more data")
    return idx


def check_shards(n: int, cfg: FederatedConfig) -> None:
    """Up-front check that every client gets at least ``k`` examples (a hidden batch needs k)."""
    smallest = n // cfg.clients
    if smallest == 0:
        shard_indices(n, cfg.clients, cfg.clients - 1)  # raises the empty-shard error
    if smallest < cfg.k:
        raise PrivnluError(f"the smallest client shard has {smallest} examples, fewer than k = {cfg.k}; "
                           "use fewer clients or more data")


def load_train(cfg: FederatedConfig) -> TextDataset:
    return _load_split(cfg.task, "train", cfg.data_dir, cfg.train_limit)


def load_dev(cfg: FederatedConfig) -> dict[str, TextDataset]:
    task = get_task(cfg.task)
    return {s: _load_split(cfg.task, s, cfg.data_dir, cfg.dev_limit) for s in task.eval_splits}


@functools.lru_cache(maxsize=8)
def _load_split(task: str, split: str, data_dir: str, limit: int) -> TextDataset:
    return get_task(task).load(split, data_dir or None).head(limit or None)


def cached_features(cfg: FederatedConfig, encoder: SentenceEncoder, ds: TextDataset) -> torch.Tensor:
    return FeatureCache(cfg.cache_dir or None).get(encoder, ds, max_length=cfg.max_length, progress=False).features


def labels_tensor(ds: TextDataset) -> torch.Tensor:
    return torch.tensor(ds.labels, dtype=torch.float32 if ds.is_regression else torch.long)


def load_client_data(cfg: FederatedConfig, partition: int, encoder: SentenceEncoder) -> ClientData:
    """The shard of client ``partition`` with its representation function."""
    train = load_train(cfg)
    rows = shard_indices(len(train), cfg.clients, partition)
    task = get_task(cfg.task)
    shard = train.subset(rows.tolist())
    targets = targets_from_labels(labels_tensor(shard), num_outputs(task), regression=task.is_regression)
    if cfg.mode == "frozen":
        feats = cached_features(cfg, encoder, train)[torch.from_numpy(rows)]
        return ClientData(lambda idx: feats[idx], targets, shard.texts_a)
    tok = encoder.tokenize(shard.texts_a, shard.texts_b, max_length=cfg.max_length, padding="max_length")

    def represent(idx: torch.Tensor) -> torch.Tensor:
        batch = {k: v[idx] for k, v in tok.items()}
        width = int(batch["attention_mask"].sum(1).max())
        batch = {k: v[:, :width] for k, v in batch.items()}
        return encoder(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))

    return ClientData(represent, targets, shard.texts_a, tok)
