"""A tiny randomly initialised BERT with the bert-base-uncased vocabulary, for fast tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from .encoder import default_model_path

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def make_tiny_bert(path: str | Path, *, hidden: int = 32, layers: int = 2, heads: int = 2, seed: int = 0) -> Path:
    """Write a random-init BERT (``hidden`` wide) plus the packaged MiniLM tokenizer to ``path``."""
    from transformers import BertConfig, BertModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    src = default_model_path()
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copy(src / name, path / name)
    cfg = BertConfig(
        vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, max_position_embeddings=512,
    )
    torch.manual_seed(seed)
    BertModel(cfg).save_pretrained(path)
    return path
