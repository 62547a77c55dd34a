"""Representation reconstruction (Huang et al. 2020, appendix C.3, Table 8).

From known pairs ``(h(s), E(h(s)))`` of other examples under the defender's key,
the attacker fits an MLP ``g`` with hidden sizes (1024, 1024) by mean squared
error, ``min_g sum ||g(E(h(s))) - h(s)||^2``, then runs the similarity search of
:mod:`privnlu.attacks.representation.search` on ``g(q)`` for each released encoding ``q``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from tqdm.auto import tqdm

from ...errors import PrivnluError
from .search import SearchResult, SimilaritySearch
from ..threat import Attack, AttackerView, Grant


@dataclass(frozen=True)
class InversionConfig:
    hidden: tuple[int, ...] = (1024, 1024)
    epochs: int = 20
    lr: float = 1e-3
    batch_size: int = 128
    seed: int | None = 0  # model initialisation and batch order only (the attacker's own randomness)

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or not self.lr > 0 or any(h < 1 for h in self.hidden):
            raise PrivnluError("inversion: epochs, batch size, learning rate and hidden sizes must be positive")


def make_mlp(dim: int, hidden: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = dim
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, dim))
    return nn.Sequential(*layers)


def fit_inverse(encoded: torch.Tensor, original: torch.Tensor, config: InversionConfig) -> tuple[nn.Module, list[float]]:
    """Fit ``g: encoding -> original`` by MSE with Adam; returns the model and per-epoch mean losses."""
    gen = torch.Generator().manual_seed(config.seed) if config.seed is not None else torch.Generator()
    if config.seed is not None:
        torch.manual_seed(config.seed)
    net = make_mlp(encoded.shape[1], config.hidden)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    n, losses = len(encoded), []
    for _ in tqdm(range(config.epochs), desc="inversion MLP", unit="epoch", leave=False):
        order = torch.randperm(n, generator=gen)
        total = 0.0
        for s in range(0, n, config.batch_size):
            idx = order[s : s + config.batch_size]
            loss = nn.functional.mse_loss(net(encoded[idx]), original[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / n)
    net.eval()
    return net, losses


class RepresentationInversion(Attack):
    """Learn encoding -> original on known pairs, then similarity-search the prediction."""

    name = "invert"
    requires = frozenset({Grant.ENCODINGS, Grant.CANDIDATES, Grant.KNOWN_PAIRS})

    def __init__(self, config: InversionConfig | None = None) -> None:
        self.config = config or InversionConfig()
        self.losses: list[float] = []

    def run(self, view: AttackerView) -> tuple[SearchResult, torch.Tensor]:
        """(search result on g(encodings), g(encodings))."""
        self.check(view)
        originals, encoded = view.need("known_pairs")
        if len(originals) < 2:
            raise PrivnluError("inversion needs at least 2 known pairs to train on")
        net, self.losses = fit_inverse(encoded.float(), originals.float(), self.config)
        with torch.no_grad():
            pred = net(view.need("encodings").float())
        return SimilaritySearch().run(view, queries=pred), pred
