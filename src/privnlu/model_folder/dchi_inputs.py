"""A d_chi fine-tuned model's inputs and logits: the tokenization, the user side's privatization and the provider's
forward pass, shared by fine-tuning (:mod:`privnlu.training.private_finetune`) and ``privnlu predict``, so that a
query goes through exactly what the dev set went through."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..errors import PrivnluError
from ..mechanisms.dchi import TokenSpace, m_seq
from ..mechanisms.dchi_modes import FinetuneMode, finetune_mode
from ..models.encoder import SentenceEncoder
from ..models.features import extract_features
from ..models.padding import pad
from ..models.precision import autocast
from ..rng import SecretGenerator

PRIVATIZE_CHUNK = 256


@dataclass
class Split:
    """A tokenized split: per example ids and segment ids ([CLS] a [SEP] (b [SEP])), labels, and clean h(x)."""

    ids: list[torch.Tensor]
    types: list[torch.Tensor]
    labels: torch.Tensor
    features: torch.Tensor | None = None


def tokenize_texts(tokenizer, texts_a: list[str], texts_b: list[str] | None, labels: torch.Tensor, *,
                   max_length: int, features_encoder: SentenceEncoder | None = None) -> Split:
    """A :class:`Split` of texts (pairs): ids and segment ids, and with ``features_encoder`` the user-side
    ``h(x)`` (sequence mode). Training, evaluation and ``privnlu predict`` tokenize the same way."""
    tok = tokenizer(texts_a, texts_b, truncation=True, max_length=max_length)
    types = tok.get("token_type_ids") or [[0] * len(x) for x in tok["input_ids"]]
    feats = (extract_features(features_encoder, texts_a, texts_b, max_length=max_length, progress=False)
             if features_encoder is not None else None)
    return Split([torch.tensor(x) for x in tok["input_ids"]], [torch.tensor(t) for t in types], labels, feats)


# -- the user side ----------------------------------------------------------

def privatize_split(split: Split, mode: str | FinetuneMode, space: TokenSpace, eta: float | None,
                    rng: SecretGenerator, pad_id: int) -> list[torch.Tensor]:
    """What the user sends for each example: clean ids, M_txt ids, M_rep embeddings (L, n), or M_seq (d,)."""
    mode = finetune_mode(mode)
    if not mode.private:
        return list(split.ids)
    assert eta is not None
    if mode.on_representation:
        if split.features is None:
            raise PrivnluError("sequence mode needs the user-side representations (prepare(sequence_features=True))")
        return list(m_seq(split.features, eta, rng))
    out: list[torch.Tensor] = []
    for s in range(0, len(split.ids), PRIVATIZE_CHUNK):
        chunk = split.ids[s : s + PRIVATIZE_CHUNK]
        ids, mask = pad(chunk, pad_id)
        priv = mode.tokens(space, ids, eta, rng, mask)
        out += [priv[i, : len(x)] for i, x in enumerate(chunk)]
    return out


# -- the provider side -------------------------------------------------------

def collate(payload: list[torch.Tensor], types: list[torch.Tensor], mode: str | FinetuneMode,
            pad_id: int) -> dict[str, torch.Tensor]:
    if finetune_mode(mode).sends_embeddings:
        emb, mask = pad(payload, 0.0)
        return {"inputs_embeds": emb, "attention_mask": mask, "token_type_ids": pad(types, 0)[0]}
    ids, mask = pad(payload, pad_id)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": pad(types, 0)[0]}


def forward(model: nn.Module, payload: list[torch.Tensor], types: list[torch.Tensor], idx: torch.Tensor,
            mode: str | FinetuneMode, pad_id: int, bf16: bool = False) -> torch.Tensor:
    """Float32 logits of the examples ``idx``, padded to the longest in the batch; the model under bf16 autocast
    when ``bf16``."""
    device = next(model.parameters()).device
    with autocast(device, bf16):
        if finetune_mode(mode).on_representation:
            return model(torch.stack([payload[i] for i in idx.tolist()]).to(device)).float()
        batch = collate([payload[i] for i in idx.tolist()], [types[i] for i in idx.tolist()], mode, pad_id)
        return model(**{k: v.to(device) for k, v in batch.items()}).float()


@torch.no_grad()
def logits_in_order(model: nn.Module, payload: list[torch.Tensor], types: list[torch.Tensor], mode: str | FinetuneMode,
                    pad_id: int,
                    *, batch_size: int = 128, bf16: bool = False) -> torch.Tensor:
    """The model's float32 logits of privatized ``payload`` in eval mode; batches of similar length (sorted), the
    logits put back in input order. Evaluation and ``privnlu predict`` both use it."""
    was = model.training
    model.eval()
    mode = finetune_mode(mode)
    order = (torch.arange(len(payload)) if mode.on_representation else
             torch.argsort(torch.tensor([len(p) for p in payload]), stable=True))
    sorted_out = torch.cat([forward(model, payload, types, order[i : i + batch_size], mode, pad_id, bf16).cpu()
                            for i in range(0, len(payload), batch_size)])
    logits = torch.empty_like(sorted_out)
    logits[order] = sorted_out
    model.train(was)
    return logits
