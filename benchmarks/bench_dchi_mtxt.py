"""M_txt speed (d_chi noise + exact nearest-token search, batched) against the matmul bound and a per-token loop.

Ratios, per table dimension d, against references measured in the same process:

* ``d{d}_fraction_of_matmul_bound``: a plain float32 (B x n) @ (n x V) product of the same shape (the least the
  exact search must do; it adds the noise draw, ``||e||^2 - 2 x.e`` and an argmin over V) over ``m_txt``'s time,
  so 1.0 is the bound;
* ``d{d}_speedup_vs_per_token_loop``: one ``m_txt`` call per token (as per-word d_chi implementations do), timed
  on ``--loop-tokens`` tokens and scaled, over the batched call.

Tables: d = 384 is the packaged MiniLM table; d = 768 is a RANDOM table of bert-base-uncased's size (30522 x 768,
same special-token mask): the speed depends only on the shapes. Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_dchi_mtxt.py [--tokens 8192] [--dims 384,768]
"""

from __future__ import annotations

import argparse
import time

import torch

from common import save
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--loop-tokens", type=int, default=64)
    ap.add_argument("--dims", default="384,768")
    ap.add_argument("--eta", type=float, default=100.0)
    args = ap.parse_args()
    rng = SecretGenerator(0, warn=False)
    minilm, _ = load_token_space()
    ratios, details = {}, {}
    for dim in (int(d) for d in args.dims.split(",")):
        space, what = table_for(dim, minilm)
        g = torch.Generator().manual_seed(dim)
        ids = space.regular_ids[torch.randint(len(space.regular_ids), (args.tokens,), generator=g)]
        v = len(space.regular_ids)
        m_txt(space, ids[:512], args.eta, rng)  # warm-up
        t_mtxt = timed(lambda: m_txt(space, ids, args.eta, rng))
        q = torch.randn(512, dim)
        t_mm = timed(lambda: q @ space.regular.T, repeat=5) / 512 * args.tokens
        sub = ids[: args.loop_tokens]
        t_loop = timed(lambda: [m_txt(space, sub[i : i + 1], args.eta, rng) for i in range(len(sub))]) / len(sub) * args.tokens
        ratios[f"d{dim}_fraction_of_matmul_bound"] = t_mm / t_mtxt
        ratios[f"d{dim}_speedup_vs_per_token_loop"] = t_loop / t_mtxt
        details[f"d{dim}"] = {"table": what, "regular_tokens": v, "seconds": {"m_txt": t_mtxt, "matmul_bound": t_mm,
                                                                              "per_token_loop_scaled": t_loop}}
    save("dchi_mtxt", reference="a plain float32 matmul of the same shape (bound); one m_txt call per token",
         ratios=ratios, tokens=args.tokens, loop_tokens=args.loop_tokens, eta=args.eta, tables=details)


if __name__ == "__main__":
    main()
