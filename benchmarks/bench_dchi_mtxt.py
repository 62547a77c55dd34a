"""M_txt throughput (exact nearest-token search) against the matmul FLOP bound and a per-token loop.

Ratios are against references measured in the same process:
* the FLOP bound: a plain float32 (B x n) @ (n x V) product of the same shape,
  i.e. the best the exact search can do on this machine (the search adds the
  noise draw, ``||e||^2 - 2 x.e`` and an argmin over V);
* a per-token loop: one ``m_txt`` call (noise + nearest-neighbour lookup) per token, as in
  per-word d_chi implementations, timed on ``--loop-tokens`` tokens and extrapolated.

Tables: d = 384 is the packaged MiniLM table; d = 768 is a RANDOM table of bert-base-uncased's
size (30522 x 768, same special-token mask), since no bert-base is available offline; throughput
depends only on the shapes.

Usage: PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_dchi_mtxt.py [--tokens 8192] [--dims 384,768]
"""

from __future__ import annotations

import argparse
import time

import torch

from privnlu.mechanisms.dchi import TokenSpace, load_token_space, m_txt
from privnlu.rng import SecretGenerator


def timed(fn, repeat: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def table_for(dim: int, minilm: TokenSpace) -> tuple[TokenSpace, str]:
    if dim == minilm.dim:
        return minilm, "MiniLM table"
    g = torch.Generator().manual_seed(dim)
    table = torch.randn(minilm.vocab_size, dim, generator=g) * 0.05
    return TokenSpace(table, minilm.special.clone()), "random table, bert-base size"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--loop-tokens", type=int, default=64)
    ap.add_argument("--dims", default="384,768")
    ap.add_argument("--eta", type=float, default=100.0)
    args = ap.parse_args()
    rng = SecretGenerator(0, warn=False)
    minilm, _ = load_token_space()
    print(f"threads={torch.get_num_threads()}  tokens={args.tokens}  eta={args.eta}")
    for dim in (int(d) for d in args.dims.split(",")):
        space, what = table_for(dim, minilm)
        g = torch.Generator().manual_seed(dim)
        ids = space.regular_ids[torch.randint(len(space.regular_ids), (args.tokens,), generator=g)]
        v = len(space.regular_ids)
        m_txt(space, ids[:512], args.eta, rng)  # warm-up
        t_mtxt = timed(lambda: m_txt(space, ids, args.eta, rng))
        q = torch.randn(512, dim)
        t_mm = timed(lambda: q @ space.regular.T, repeat=5) / 512 * args.tokens
        flops = 2.0 * args.tokens * dim * v
        sub = ids[: args.loop_tokens]
        t_loop = timed(lambda: [m_txt(space, sub[i : i + 1], args.eta, rng) for i in range(len(sub))]) / len(sub) * args.tokens
        print(f"d={dim} ({what}, {v} regular tokens): M_txt {args.tokens / t_mtxt:,.0f} tokens/s | matmul bound "
              f"{args.tokens / t_mm:,.0f} tokens/s ({flops / t_mm / 1e9:.1f} GFLOP/s) -> {t_mm / t_mtxt:.2f} of bound | "
              f"per-token loop {args.tokens / t_loop:,.0f} tokens/s -> batched is {t_loop / t_mtxt:.1f}x faster")


if __name__ == "__main__":
    main()
