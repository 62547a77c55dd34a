"""Length-bucketed batching (every example once per epoch, random order, minimal padding) and the bf16 selection."""

from __future__ import annotations

import argparse

import pytest
import torch

from privnlu.errors import PrivnluError
from privnlu.models import precision
from privnlu.training import TrainConfig, fit
from privnlu.training.batching import bucket_batches, count_batches, pad, padded_cells


def sst2_like_lengths(n: int, seed: int = 0) -> torch.Tensor:
    """Skewed token lengths in [3, 64], mean about 13, like SST-2 under a 64-token limit."""
    g = torch.Generator().manual_seed(seed)
    return (3 + (-torch.log(torch.rand(n, generator=g)) * 10).long()).clamp(max=64)


@pytest.mark.parametrize("n, b, k", [(1000, 32, 1), (1000, 32, 4), (995, 32, 4), (993, 32, 4), (31, 32, 4), (64, 32, 4)])
@pytest.mark.parametrize("bucketed", [True, False])
def test_every_example_exactly_once_per_epoch(n, b, k, bucketed):
    lengths = sst2_like_lengths(n) if bucketed else None
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        batches = bucket_batches(lengths, b, g, n=n, min_size=k, bucket_batches=4)
        seen = torch.cat(batches)
        assert sorted(seen.tolist()) == list(range(n))
        assert all(len(x) >= k for x in batches)
        assert len(batches) == count_batches(n, b, k)


def test_too_few_examples_for_k_gives_no_batch():
    assert bucket_batches(torch.tensor([5, 6]), 32, torch.Generator().manual_seed(0), min_size=4) == []
    assert count_batches(2, 32, 4) == 0


def test_order_is_random_across_epochs_and_seeds():
    lengths = sst2_like_lengths(2000)
    g = torch.Generator().manual_seed(0)
    e1, e2 = bucket_batches(lengths, 32, g), bucket_batches(lengths, 32, g)
    other = bucket_batches(lengths, 32, torch.Generator().manual_seed(1))
    again = bucket_batches(lengths, 32, torch.Generator().manual_seed(0))
    assert [x.tolist() for x in again] == [x.tolist() for x in e1]  # the seed fixes the order
    for a, b in ((e1, e2), (e1, other)):
        assert torch.cat(a).tolist() != torch.cat(b).tolist()
        # not just the batch order: the batches themselves are drawn anew (shuffled inside the length buckets)
        assert {frozenset(x.tolist()) for x in a} != {frozenset(x.tolist()) for x in b}
    # the batch order is shuffled: consecutive batches are not sorted by length
    widths = [int(lengths[x].max()) for x in e1]
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)


def test_padding_is_minimal():
    lengths = sst2_like_lengths(20000)
    g = torch.Generator().manual_seed(0)
    real = int(lengths.sum())
    # one batch per bucket: exactly the padding of cutting the sorted lengths into batches (the minimum for b rows)
    tight = bucket_batches(lengths, 32, g, bucket_batches=1)
    ideal = sum(32 * int(c.max()) if len(c) == 32 else len(c) * int(c.max()) for c in torch.sort(lengths).values.split(32))
    assert padded_cells(lengths, tight) == ideal
    bucketed = padded_cells(lengths, bucket_batches(lengths, 32, g))
    random = padded_cells(lengths, bucket_batches(None, 32, g, n=len(lengths)))
    assert bucketed <= 1.10 * real  # stated bound: at most 10% padding at the default bucket size
    assert bucketed <= 0.5 * random and random <= 64 * len(lengths)


def test_pad_pads_to_the_longest_in_the_batch():
    ids, mask = pad([torch.tensor([1, 2, 3]), torch.tensor([4])], 0)
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    emb, mask = pad([torch.ones(2, 5), torch.ones(1, 5)], 0.0)
    assert emb.shape == (2, 2, 5) and mask.sum() == 3


def test_fit_with_lengths_sees_every_example_once_per_epoch():
    n, d = 50, 4
    seen: list[list[int]] = []
    x = torch.randn(n, d)

    def represent(idx):
        seen.append(idx.tolist())
        return x[idx]

    task = _toy_task()
    y = torch.nn.functional.one_hot(torch.arange(n) % 2, 2).float()
    head = torch.nn.Linear(d, 2)
    fit(task=task, head=head, represent=represent, targets=y, eval_sets=lambda: {"dev": (x, torch.arange(n) % 2)},
        config=TrainConfig(epochs=2, batch_size=8, seed=0), progress=False, lengths=torch.randint(1, 30, (n,)).tolist())
    per_epoch = count_batches(n, 8)
    for e in range(2):
        assert sorted(i for b in seen[e * per_epoch : (e + 1) * per_epoch] for i in b) == list(range(n))


def _toy_task():
    from privnlu.data import get_task

    return get_task("sst2")


# -- bf16 selection -----------------------------------------------------------

@pytest.fixture()
def cpu(monkeypatch, tmp_path):
    """Control what the CPU reports: the torch probes and /proc/cpuinfo flags."""
    def set_cpu(*, avx512_bf16=False, amx=False, flags=""):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
        info = tmp_path / "cpuinfo"
        info.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 avx2 {flags}\n")
        monkeypatch.setattr(precision, "CPUINFO", str(info))
    return set_cpu


@pytest.mark.parametrize("kw, native", [({}, False), ({"avx512_bf16": True}, True), ({"amx": True}, True),
                                        ({"flags": "avx512f avx512_bf16"}, True), ({"flags": "amx_bf16"}, True),
                                        ({"flags": "avx512f avx512bw"}, False)])
def test_auto_follows_native_support(cpu, kw, native):
    cpu(**kw)
    assert precision.native_bf16("cpu") is native
    assert precision.resolve_bf16("auto", "cpu") is native
    assert precision.resolve_bf16(None, "cpu") is native
    assert precision.resolve_bf16("on", "cpu") is True and precision.resolve_bf16("off", "cpu") is False
    assert precision.resolve_bf16(True) is True and precision.resolve_bf16(False) is False


def test_cuda_without_a_gpu_is_not_native(cpu, monkeypatch):
    cpu(avx512_bf16=True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert precision.resolve_bf16("auto", "cuda") is False


def test_bad_bf16_mode():
    with pytest.raises(PrivnluError, match="bf16"):
        precision.resolve_bf16("maybe")


def test_cli_flag_keeps_the_old_meaning():
    from privnlu.cli.options import OPTIONS

    p = argparse.ArgumentParser()
    OPTIONS["bf16"].add_to(p)
    assert p.parse_args([]).bf16 == "auto"
    assert p.parse_args(["--bf16"]).bf16 == "on"  # the old store_true flag
    assert p.parse_args(["--bf16", "off"]).bf16 == "off"


def test_runspec_resolves_auto(cpu):
    from privnlu.training.engine import RunSpec

    cpu(flags="avx512_bf16")
    assert RunSpec(task="sst2").bf16 is True
    assert RunSpec(task="sst2", bf16="off").bf16 is False
    cpu()
    assert RunSpec(task="sst2").bf16 is False


def test_autocast_context():
    lin = torch.nn.Linear(4, 4)
    with precision.autocast("cpu", True):
        assert lin(torch.randn(2, 4)).dtype == torch.bfloat16
    with precision.autocast("cpu", False):
        assert lin(torch.randn(2, 4)).dtype == torch.float32
    assert lin.weight.dtype == torch.float32  # fp32 master weights
