"""Joint fine-tuning speed: length-bucketed, dynamically padded batches against padding every row to --max-length.

One fine-tuning step is what ``privnlu train --mode joint`` runs: the packaged MiniLM encoder forward on a batch,
an MLP head, cross-entropy, backward, AdamW. Three settings are timed in the same process, interleaved in rounds
(so the load of a shared machine hits all of them alike):

* ``max_length`` (the reference): random batches, every row padded to ``--max-length``;
* ``bucketed``: one epoch's batches from :func:`privnlu.training.batching.bucket_batches` over the training set's
  token lengths, each padded to its own longest row; a random sample of ``--steps`` of them is timed;
* ``bucketed_bf16``: the same batches with the encoder under bfloat16 autocast (fp32 weights). ``--bf16 auto``
  (default) times it only where the CPU has AVX-512 BF16 or AMX: elsewhere bf16 is emulated, about 10x slower.

Ratios: sentences/s of each setting over ``max_length``'s, and padded over real tokens for an epoch. The packaged
tweets corpus by default (``--task sst2`` for SST-2; skips itself where the GLUE files are absent). Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_finetune.py [--task tweets] [--train-limit 0]
        [--batch-size 32] [--max-length 64] [--steps 12] [--rounds 2] [--bf16 auto|on|off]
"""

from __future__ import annotations

import argparse
import time

import torch

from common import save, skip
from privnlu.data import get_task
from privnlu.errors import PrivnluError
from privnlu.models import MLPHead, load_encoder
from privnlu.models.precision import autocast, native_bf16, resolve_bf16
from privnlu.training.batching import bucket_batches, pad, padded_cells
from privnlu.training.losses import task_loss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="tweets")
    ap.add_argument("--train-limit", type=int, default=0, help="first N training examples (0: all)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--steps", type=int, default=12, help="timed steps per setting and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bf16", choices=("auto", "on", "off"), default="auto",
                    help="time the bf16 setting: auto (where the CPU runs bf16 natively), on, off")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    task = get_task(args.task)
    try:
        ds = task.load("train")
    except PrivnluError as exc:  # e.g. a GLUE task without the GLUE files
        skip(f"{args.task}: {exc}")
    ds = ds.head(args.train_limit) if args.train_limit else ds
    enc = load_encoder(None, pooling="mean")
    tok = enc.tokenizer(ds.texts_a, ds.texts_b, truncation=True, max_length=args.max_length)["input_ids"]
    ids = [torch.tensor(x) for x in tok]
    lengths = [len(x) for x in ids]
    labels = torch.tensor(ds.labels)
    head = MLPHead(enc.dim, len(task.label_names))
    opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=1e-5, foreach=True)
    pad_id = enc.tokenizer.pad_token_id or 0
    enc.train()

    def step(idx: torch.Tensor, width: int | None, bf16: bool) -> None:
        x, mask = pad([ids[i] for i in idx.tolist()], pad_id)
        if width is not None:  # pad every row to --max-length
            x = torch.cat([x, x.new_full((len(idx), width - x.shape[1]), pad_id)], 1)
            mask = torch.cat([mask, mask.new_zeros(len(idx), width - mask.shape[1])], 1)
        with autocast("cpu", bf16):
            h = enc(x, mask)
        loss = task_loss(head(h.float()), torch.nn.functional.one_hot(labels[idx], len(task.label_names)).float(),
                         regression=False)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    g = torch.Generator().manual_seed(args.seed)
    epoch = bucket_batches(lengths, args.batch_size, g)
    random_batches = bucket_batches(None, args.batch_size, g, n=len(ids))
    pick = torch.randperm(len(epoch), generator=g)[: args.steps * args.rounds].tolist()
    settings = {"max_length": (args.max_length, False), "bucketed": (None, False), "bucketed_bf16": (None, True)}
    if not resolve_bf16(args.bf16, "cpu"):
        del settings["bucketed_bf16"]
    seconds = {name: 0.0 for name in settings}
    sentences = {name: 0 for name in settings}
    step(epoch[0], None, False)  # warm-up
    if "bucketed_bf16" in settings:
        step(epoch[0], None, True)
    for r in range(args.rounds):
        chunk = pick[r * args.steps : (r + 1) * args.steps]
        for name, (width, bf16) in settings.items():
            batches = [random_batches[i] for i in chunk] if width is not None else [epoch[i] for i in chunk]
            t0 = time.perf_counter()
            for idx in batches:
                step(idx, width, bf16)
            seconds[name] += time.perf_counter() - t0
            sentences[name] += sum(len(b) for b in batches)
        ref = sentences["max_length"] / seconds["max_length"]
        print(f"round {r + 1}/{args.rounds}, sentences/s over max_length's: "
              + ", ".join(f"{n} {sentences[n] / seconds[n] / ref:.2f}x" for n in settings if n != "max_length"), flush=True)
    rate = {n: sentences[n] / seconds[n] for n in settings}
    real = sum(lengths)
    save("finetune", reference="the same steps on random batches padded to --max-length (fp32)",
         ratios={"speedup_bucketed_vs_max_length": rate["bucketed"] / rate["max_length"],
                 **({"speedup_bucketed_bf16_vs_max_length": rate["bucketed_bf16"] / rate["max_length"]}
                    if "bucketed_bf16" in rate else {}),
                 "padded_over_real_tokens_max_length": len(ids) * args.max_length / real,
                 "padded_over_real_tokens_bucketed": padded_cells(lengths, epoch) / real,
                 "padded_over_real_tokens_random_dynamic": padded_cells(lengths, random_batches) / real},
         task=args.task, n_train=len(ids), batch_size=args.batch_size, max_length=args.max_length,
         timed_steps_per_setting=args.steps * args.rounds, native_bf16_cpu=native_bf16("cpu"), bf16_timed="bucketed_bf16" in rate,
         sentences_per_second=rate, mean_tokens=real / len(ids))

if __name__ == "__main__":
    main()
