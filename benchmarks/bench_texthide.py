"""TextHide encoding speed (``TextHide.hide`` on one batch, k = 4, m = 256) against three references.

Ratios, all measured in this process:

* ``ratio_to_copy_bound``: ``hide`` over a plain copy of the k input matrices (the memory-bandwidth bound: the mix
  must read k rows per output row); ``hide`` and the copy are timed alternately, ``--rounds`` times, best of each,
  so load from other processes hits both alike;
* ``speedup_vs_unfused``: the unfused reference implementation (one CSPRNG read per draw, k - 1 gathered copies,
  then the mix) over ``hide`` (the batch's key drawn in one CSPRNG read, one fused gather-and-sum);
* ``speedup_vs_per_example_loop``: a per-example Python loop (partners, coefficients and mask sampled for each
  example, as a straightforward implementation does) over ``hide``.

Run alone (the defaults are the paper's shape, 4096 x 768):

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_texthide.py [--batch 4096] [--dim 768] [--rounds 30]
"""

from __future__ import annotations

import argparse

import torch

from common import best_of, interleaved, save
from privnlu.mechanisms import TextHide
from privnlu.mechanisms.texthide import mix, mixing_coefficients
from privnlu.rng import SecretGenerator

K, M = 4, 256


def per_example_loop(x: torch.Tensor, th: TextHide) -> torch.Tensor:
    b, d = x.shape
    rng, pool = th.rng, th.pool.masks
    perms = [torch.arange(b)] + [rng.permutation(b) for _ in range(K - 1)]
    out = torch.empty_like(x)
    for i in range(b):
        lam = rng.normal(K).abs()
        lam = lam / lam.sum()
        acc = torch.zeros(d)
        for j in range(K):
            acc += lam[j] * x[perms[j][i]]
        out[i] = acc * pool[int(rng.randint(M, 1)[0])]
    return out


def unfused_hide(x: torch.Tensor, y: torch.Tensor, th: TextHide) -> torch.Tensor:
    """The unfused reference implementation: a CSPRNG read per draw, k - 1 gathered copies, then the mix."""
    rng, b = th.rng, len(x)
    perms = [torch.arange(b)] + [rng.permutation(b) for _ in range(K - 1)]
    rows = [x] + [x.index_select(0, p) for p in perms[1:]]
    coeffs = mixing_coefficients(b, K, rng)
    mixed = mix(rows, coeffs)
    mix([y[p] for p in perms], coeffs)
    masks, _ = th.pool.draw(b, rng)
    return mixed.mul_(masks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--loop-rows", type=int, default=1024, help="rows the per-example loop is timed on (scaled up)")
    args = ap.parse_args()
    b, d = args.batch, args.dim
    x = torch.randn(b, d)
    y = torch.nn.functional.one_hot(torch.randint(0, 2, (b,)), 2).float()
    th = TextHide(M, K, dim=d, rng=SecretGenerator())
    copies = [x.clone() for _ in range(K)]
    best = interleaved({"hide": lambda: th.hide(x, y), "copy": lambda: [c.clone() for c in copies],
                        "unfused": lambda: unfused_hide(x, y, th)}, args.rounds)
    rows = min(args.loop_rows, b)
    t_loop = best_of(lambda: per_example_loop(x[:rows], th), repeat=1) * b / rows
    t_hide, t_copy = best["hide"], best["copy"]
    save("texthide", reference="a plain copy of the k inputs (bound); the unfused and per-example implementations",
         ratios={"ratio_to_copy_bound": t_hide / t_copy, "speedup_vs_unfused": best["unfused"] / t_hide,
                 "speedup_vs_per_example_loop": t_loop / t_hide},
         batch=[b, d], k=K, m=M, rounds=args.rounds, loop_rows_timed=rows,
         seconds={"hide": t_hide, "copy_k_inputs": t_copy, "unfused": best["unfused"],
                  "per_example_loop_extrapolated": t_loop})


if __name__ == "__main__":
    main()
