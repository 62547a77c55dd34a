"""DP-SGD speed: Opacus's per-example gradients ("hooks") and ghost clipping ("ghost") against non-private training.

One step is what ``privnlu train --scheme dp-sgd`` runs (:mod:`privnlu.training.dp_sgd`): forward, loss, backward,
per-example clipping, Gaussian noise, Adam. Timed in the same process, interleaved in rounds (so the load of a
shared machine hits all of them alike), on the same fixed batches:

* joint mode: a random-init BERT (``--layers`` layers, ``--hidden`` wide; ``--packaged`` for the packaged MiniLM)
  and an MLP head on ``--batch-size`` sentences of ``--seq-len`` tokens; the reference is the same model trained
  without privacy (plain Adam step);
* frozen mode: the MLP head alone on ``--head-batch`` cached representations of the same width.

Ratios: sentences/s of each DP-SGD mode over the non-private reference's (1 = as fast; below 1 = slower), and
ghost over hooks. ``"auto"`` in :class:`privnlu.training.dp_sgd.DPSGDConfig` is the faster mode here. Run alone:

    PYTHONPATH=src python benchmarks/bench_dp_sgd.py [--layers 2] [--hidden 128] [--seq-len 32]
        [--batch-size 32] [--steps 4] [--rounds 2] [--head-batch 256] [--head-steps 50] [--packaged]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import warnings
from pathlib import Path

import torch

from common import interleaved, save
from privnlu.models import MLPHead, load_encoder
from privnlu.models.tiny import make_tiny_bert
from privnlu.training.dp_sgd import DPSGDConfig, EncoderHead, _make_private


def private_step(model: torch.nn.Module, n: int, mode: str, batch: int):
    """A DP-SGD step function on ``model`` (Opacus wraps it) for fixed inputs, as privnlu trains."""
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(n)), batch_size=batch)
    groups = [{"params": [p for p in model.parameters() if p.requires_grad]}]
    config = DPSGDConfig(epsilon=8.0, grad_sample_mode=mode, batch_size=batch)
    private = _make_private(model.train(), groups, loader, 1.0, config, False, torch.Generator().manual_seed(0))
    return lambda inputs, y: private.step(inputs, y)


def plain_step(model: torch.nn.Module):
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()

    def step(inputs, y):
        loss = torch.nn.functional.cross_entropy(model(*inputs), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def timings(models: dict, make_inputs, batches: int, steps: int, rounds: int) -> dict[str, float]:
    """Seconds for ``steps`` steps of each setting (best of ``rounds`` interleaved rounds)."""
    data = [make_inputs(i) for i in range(batches)]

    def run(step):
        return lambda: [step(*data[i % batches]) for i in range(steps)]

    return interleaved({name: run(step) for name, step in models.items()}, rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--packaged", action="store_true", help="the packaged MiniLM instead of a random-init BERT")
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=4, help="timed joint steps per setting and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--head-batch", type=int, default=256)
    ap.add_argument("--head-steps", type=int, default=50)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message=".*[Ff]ull backward hook")  # Opacus's hooks on input-free modules
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = None if args.packaged else make_tiny_bert(Path(tmp) / "bert", hidden=args.hidden, layers=args.layers,
                                                         heads=max(1, args.hidden // 64))
        enc = load_encoder(path, pooling="mean")
    enc.model.pooler.requires_grad_(False)  # not reached under mean pooling (privnlu freezes it)
    d, b, n = enc.dim, args.batch_size, 100 * args.batch_size
    base = EncoderHead(enc, MLPHead(d, 2, None, 0.1))

    def joint_inputs(i: int):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(1000, 30000, (b, args.seq_len), generator=g)
        return (ids, torch.ones_like(ids)), torch.randint(0, 2, (b,), generator=g)

    joint = {"non_private": plain_step(copy.deepcopy(base))}
    for mode in ("hooks", "ghost"):
        model = copy.deepcopy(base)
        model.per_example_embeddings()
        joint[mode] = private_step(model, n, mode, b)
    t_joint = timings(joint, joint_inputs, 3, args.steps, args.rounds)

    hb = args.head_batch
    head = MLPHead(d, 2, None, 0.1)

    def head_inputs(i: int):
        g = torch.Generator().manual_seed(i)
        return (torch.randn(hb, d, generator=g),), torch.randint(0, 2, (hb,), generator=g)

    heads = {"non_private": plain_step(copy.deepcopy(head)),
             **{mode: private_step(copy.deepcopy(head), 100 * hb, mode, hb) for mode in ("hooks", "ghost")}}
    t_head = timings(heads, head_inputs, 3, args.head_steps, args.rounds)

    ratios = {f"joint_{m}": t_joint["non_private"] / t_joint[m] for m in ("hooks", "ghost")}
    ratios["joint_ghost_over_hooks"] = t_joint["hooks"] / t_joint["ghost"]
    ratios.update({f"frozen_{m}": t_head["non_private"] / t_head[m] for m in ("hooks", "ghost")})
    ratios["frozen_ghost_over_hooks"] = t_head["hooks"] / t_head["ghost"]
    save("dp_sgd", reference="non-private training of the same model on the same batches (plain Adam step): "
                             "sentences/s of DP-SGD over it; ghost_over_hooks: ghost clipping's speed over hooks'",
         ratios=ratios, model="packaged MiniLM" if args.packaged else f"random BERT, {args.layers} layers, {d} wide",
         seq_len=args.seq_len, batch_size=b, steps=args.steps, head_batch=hb, head_steps=args.head_steps,
         rounds=args.rounds, seconds={"joint": t_joint, "frozen": t_head},
         sentences_per_second={"joint": {k: args.steps * b / v for k, v in t_joint.items()},
                               "frozen": {k: args.head_steps * hb / v for k, v in t_head.items()}})


if __name__ == "__main__":
    main()
