"""The federated model (MLP head, plus the encoder in joint mode) and its wire format.

Joint mode fine-tunes the encoder but, by default, not its lookup tables (word, position and
token-type embeddings): the gradient of a lookup table ``E`` is ``dL/dE[v] = sum_{(b,p): x_bp = v} dL/de_bp``,
non-zero exactly in the rows of the ids in the batch, so a client sending it sends its bag of words
(Melis et al. 2019). Frozen tables are not parameters of the federated model and never go on
the wire; ``train_embeddings`` restores the old, leaking behaviour.

Parameters travel as one Flower ``ArrayRecord`` keyed ``head.<name>`` and
``encoder.<name>``; gradients use the same keys, so the server can apply an
averaged gradient to the parameter of the same name.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch
from flwr.app import Array, ArrayRecord
from torch import nn

from ..data.tasks import TaskSpec, get_task
from ..models import MLPHead, load_encoder
from ..models.encoder import SentenceEncoder
from .config import FederatedConfig, hidden_sizes

EMBEDDING_LEAK_WARNING = (
    "--train-embeddings sends the gradient of the embedding tables, whose non-zero rows are exactly the token ids of "
    "each client's batch: the server and any eavesdropper read every client's words off the wire (the "
    "embedding-gradient leak; TextHide does not hide it). `privnlu attack gradient --wire` shows it.")


@dataclass
class FederatedModel:
    """The head and, in joint mode, the encoder; ``modules()`` names them for the wire."""

    task: TaskSpec
    head: nn.Module
    encoder: SentenceEncoder | None

    def modules(self) -> dict[str, nn.Module]:
        mods: dict[str, nn.Module] = {"head": self.head}
        if self.encoder is not None:
            mods["encoder"] = self.encoder
        return mods

    def named_parameters(self) -> dict[str, nn.Parameter]:
        return {f"{mn}.{pn}": p for mn, mod in self.modules().items() for pn, p in mod.named_parameters() if p.requires_grad}

    def to_arrays(self) -> ArrayRecord:
        return tensors_to_record({n: p.detach() for n, p in self.named_parameters().items()})

    def load_arrays(self, record: ArrayRecord) -> None:
        params = self.named_parameters()
        got = record_to_tensors(record)
        if set(got) != set(params):
            raise ValueError("the received model does not match this client's model (different task or settings)")
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(got[name].to(p.dtype))


def num_outputs(task: TaskSpec) -> int:
    return 1 if task.is_regression else len(task.label_names)


def build_model(cfg: FederatedConfig, encoder: SentenceEncoder, *, init_seed: int | None = None) -> FederatedModel:
    """The global model: a fresh MLP head (``init_seed`` fixes its initialisation), plus the encoder in joint mode."""
    task = get_task(cfg.task)
    if init_seed is not None:
        torch.manual_seed(init_seed)
    head: nn.Module = MLPHead(encoder.dim, num_outputs(task), hidden_sizes(cfg.hidden), cfg.dropout)
    if cfg.abs_input:
        from ..models.heads import AbsInput

        head = AbsInput(head)
    if cfg.mode == "joint":
        set_embeddings_trainable(encoder, cfg.train_embeddings)
        return FederatedModel(task, head, encoder)
    return FederatedModel(task, head, None)


def embedding_tables(encoder: nn.Module) -> dict[str, nn.Parameter]:
    """The encoder's lookup tables (every ``nn.Embedding`` weight: word, position, token type) by name."""
    return {f"{mn}.{pn}" if mn else pn: p for mn, mod in encoder.named_modules() if isinstance(mod, nn.Embedding)
            for pn, p in mod.named_parameters(recurse=False)}


def set_embeddings_trainable(encoder: nn.Module, trainable: bool) -> None:
    """Freeze (the default) or unfreeze the lookup tables; everything else in the encoder stays trainable."""
    tables = {id(p) for p in embedding_tables(encoder).values()}
    for p in encoder.parameters():
        p.requires_grad_(trainable if id(p) in tables else True)


def load_config_encoder(cfg: FederatedConfig) -> SentenceEncoder:
    """The run's encoder; in frozen mode one shared, never-modified instance per process."""
    if cfg.mode == "frozen":
        return frozen_encoder(cfg.model, cfg.pooling)
    return load_encoder(cfg.model or None, pooling=cfg.pooling)


@functools.lru_cache(maxsize=2)
def frozen_encoder(model: str, pooling: str) -> SentenceEncoder:
    return load_encoder(model or None, pooling=pooling)


def tensors_to_record(tensors: dict[str, torch.Tensor]) -> ArrayRecord:
    return ArrayRecord({k: Array(np.ascontiguousarray(v.detach().cpu().float().numpy())) for k, v in tensors.items()})


def record_to_tensors(record: ArrayRecord) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.array(v.numpy(), copy=True)) for k, v in record.items()}
