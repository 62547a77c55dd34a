"""TextHide encoding of a 4096 x 768 batch with k = 4 (m = 256).

Compared, in the same process, against
* a per-example Python loop that samples partners, coefficients and a mask for
  each example separately (as the reference code sampled masks per example);
* the memory-bandwidth bound: a plain copy of the k input matrices.
"""

from __future__ import annotations

import torch

from common import best_of, save
from privnlu.mechanisms import TextHide
from privnlu.rng import SecretGenerator

B, D, K, M = 4096, 768, 4, 256


def per_example_loop(x: torch.Tensor, y: torch.Tensor, th: TextHide) -> torch.Tensor:
    rng, pool = th.rng, th.pool.masks
    perms = [torch.arange(B)] + [rng.permutation(B) for _ in range(K - 1)]
    out = torch.empty_like(x)
    for i in range(B):
        lam = rng.normal(K).abs()
        lam = lam / lam.sum()
        acc = torch.zeros(D)
        for j in range(K):
            acc += lam[j] * x[perms[j][i]]
        out[i] = acc * pool[int(rng.randint(M, 1)[0])]
    return out


def main() -> None:
    x = torch.randn(B, D)
    y = torch.nn.functional.one_hot(torch.randint(0, 2, (B,)), 2).float()
    th = TextHide(M, K, dim=D, rng=SecretGenerator())
    t_vec = best_of(lambda: th.hide(x, y))
    t_loop = best_of(lambda: per_example_loop(x, y, th), repeat=1)
    copies = [x.clone() for _ in range(K)]
    t_copy = best_of(lambda: [c.clone() for c in copies], repeat=5)
    save("texthide_encoding", {
        "batch": [B, D], "k": K, "m": M,
        "seconds_vectorised": t_vec, "seconds_per_example_loop": t_loop, "seconds_copy_k_inputs": t_copy,
        "speedup_vs_loop": t_loop / t_vec, "ratio_to_copy_bound": t_vec / t_copy,
        "bytes_per_copy_GBps": K * x.numel() * 4 * 2 / t_copy / 1e9,
    })


if __name__ == "__main__":
    main()
