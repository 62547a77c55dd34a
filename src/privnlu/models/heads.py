"""Task heads on top of sentence representations."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from .bilstm import BiLSTMEncoder
from .encoder import pool


class MLPHead(nn.Module):
    """The TextHide classifier: an MLP with ReLU hidden layers.

    The paper uses hidden sizes (768, 768, 768) on bert-base; privnlu's default
    is (d, d, d) with d the encoder width.
    """

    def __init__(self, d_in: int, num_outputs: int, hidden: Sequence[int] | None = None, dropout: float = 0.1) -> None:
        super().__init__()
        hidden = tuple(hidden) if hidden is not None else (d_in, d_in, d_in)
        layers: list[nn.Module] = []
        width = d_in
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(dropout)]
            width = h
        layers.append(nn.Linear(width, num_outputs))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class AbsInput(nn.Module):
    """``f(|x|)``: a head that sees absolute values only.

    Sign masks satisfy ``|sigma o v| = |v|``, so such a head is mask-invariant: it can
    be trained on TextHide encodings and applied to new inputs without any key. This is
    the first step of Xie & Hong's attack, and a check of how much the masks hide.
    """

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x.abs())


class Classifier(nn.Module):
    """Provider model: an encoder body (HF transformer or BiLSTM) + dropout + a linear layer on ``h(x)``."""

    def __init__(self, body: nn.Module, dim: int, num_outputs: int, *, pooling: str = "cls", dropout: float = 0.1) -> None:
        super().__init__()
        self.body = body
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(dim, num_outputs)

    def forward(self, *, attention_mask: torch.Tensor, input_ids: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        if isinstance(self.body, BiLSTMEncoder):
            h = self.body(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds)
        else:
            o = self.body(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
                          token_type_ids=token_type_ids)
            h = pool(o, attention_mask, self.pooling)
        return self.out(self.dropout(h))
