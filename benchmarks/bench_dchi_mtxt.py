"""M_txt throughput (exact nearest-token search) against the matmul FLOP bound and a per-token loop.

Ratios are against references measured in the same process:
* the FLOP bound: a plain float32 (B x n) @ (n x V) product of the same shape,
  i.e. the best the exact search can do on this machine;
* a per-token loop: one nearest-neighbour lookup per token (as in per-word
  d_chi implementations), timed on a small sample and extrapolated per token.

Usage: PYTHONPATH=src python benchmarks/bench_dchi_mtxt.py [--tokens 4096] [--dims 384,768]
"""

from __future__ import annotations

import argparse
import time

import torch

from privnlu.mechanisms.dchi import TokenSpace, m_txt
from privnlu.rng import SecretGenerator


def timed(fn, repeat: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--loop-tokens", type=int, default=64)
    ap.add_argument("--dims", default="384,768")
    ap.add_argument("--vocab", type=int, default=30522)
    args = ap.parse_args()
    rng = SecretGenerator(0, warn=False)
    print(f"threads={torch.get_num_threads()}  vocab={args.vocab}  tokens={args.tokens}")
    for dim in (int(d) for d in args.dims.split(",")):
        g = torch.Generator().manual_seed(dim)
        table = torch.randn(args.vocab, dim, generator=g) * 0.05  # random table: throughput only depends on shapes
        special = torch.zeros(args.vocab, dtype=torch.bool)
        special[:999] = True
        space = TokenSpace(table, special)
        ids = space.regular_ids[torch.randint(len(space.regular_ids), (args.tokens,), generator=g)]
        eta = dim / 1.0
        m_txt(space, ids[:256], eta, rng)  # warm-up
        t_mtxt = timed(lambda: m_txt(space, ids, eta, rng))
        q = torch.randn(512, dim)
        t_mm = timed(lambda: q @ space.regular.T, repeat=5) / 512 * args.tokens
        flops = 2.0 * args.tokens * dim * len(space.regular_ids)
        sub = ids[: args.loop_tokens]
        t_loop = timed(lambda: [m_txt(space, sub[i : i + 1], eta, rng) for i in range(len(sub))]) / len(sub) * args.tokens
        print(f"d={dim}: M_txt {args.tokens / t_mtxt:,.0f} tokens/s | matmul bound {args.tokens / t_mm:,.0f} tokens/s "
              f"({flops / t_mm / 1e9:.1f} GFLOP/s) -> {t_mm / t_mtxt:.2f} of bound | per-token loop "
              f"{args.tokens / t_loop:,.0f} tokens/s -> batched is {t_loop / t_mtxt:.1f}x faster")


if __name__ == "__main__":
    main()
