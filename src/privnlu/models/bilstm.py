"""A BiLSTM sentence encoder over a transformer's WordPiece embedding table (Qu et al. 2021's baseline).

``h(x) = max_t [LSTM_fwd(e_1..e_t) ; LSTM_bwd(e_t..e_L)]``: the embeddings ``e_i``
(looked up in a copy of the transformer's input table, or given directly as
privatized vectors) run through a bidirectional LSTM, and the outputs are
max-pooled over the non-padding positions. Sentence pairs are one sequence
``[CLS] a [SEP] b [SEP]``, as for the transformer.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiLSTMEncoder(nn.Module):
    """WordPiece embeddings -> BiLSTM -> max-pooling; output width ``2 * hidden``."""

    def __init__(self, embeddings: torch.Tensor, *, hidden: int = 256, layers: int = 1, dropout: float = 0.1,
                 pad_id: int = 0) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding.from_pretrained(embeddings.detach().clone().float(), freeze=False, padding_idx=pad_id)
        self.lstm = nn.LSTM(embeddings.shape[1], hidden, num_layers=layers, batch_first=True, bidirectional=True,
                            dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.hidden = hidden

    @property
    def dim(self) -> int:
        return 2 * self.hidden

    def get_input_embeddings(self) -> nn.Embedding:
        return self.word_embeddings

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, **_: object) -> torch.Tensor:
        x = inputs_embeds if inputs_embeds is not None else self.word_embeddings(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones(x.shape[:2], dtype=torch.long, device=x.device)
        lengths = attention_mask.sum(1).clamp_min(1).cpu()
        packed = pack_padded_sequence(self.dropout(x), lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        valid = attention_mask.bool().unsqueeze(-1)
        return out.masked_fill(~valid, float("-inf")).amax(1)
