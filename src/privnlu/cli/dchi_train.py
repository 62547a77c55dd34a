"""``privnlu dchi finetune`` and ``privnlu dchi pretrain``: training under d_chi-privacy (Qu et al. 2021, 3.3-3.4)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..choices import FINETUNE_ENCODERS, MLM_OBJECTIVES
from ..params import NONNEG_INT, POS_INT, RATE, Option, Range, name_list
from .common import say, warn_seed
from .options import add

I, F = int, float


def register(sub: argparse._SubParsersAction) -> None:
    """``dchi finetune`` and ``dchi pretrain`` (``sub``: the ``dchi`` group's subcommands)."""
    f = sub.add_parser("finetune", help="privacy-constrained fine-tuning: none / dchi-sequence / dchi-token / dchi-text",
                       description="The user privatizes train and dev examples once (d_chi, eta); the provider "
                                   "fine-tunes on privatized input only, never updating the user-side parts "
                                   "(Qu et al.'s fine-tuning modes: none is their Null Privacy). Writes one results "
                                   "JSON per (encoder, scheme, eta) into --out, and beside it the run's model folder "
                                   "(Hugging Face layout, model card; `privnlu predict --run` applies it); runs whose "
                                   "JSON already exists are skipped, and an interrupted run continues from its last "
                                   "epoch on the same privatized data.")
    add(f, "task", "schemes",
        Option("encoders", "--encoders", "transformer and/or bilstm", name_list, default="transformer"),
        "etas", "out", "model",
        Option("tag", "--tag", "label added to the results file names and records (e.g. the checkpoint)", default=""),
        "data_dir", "train_limit", "dev_limit", "max_length", "batch_size", "epochs",
        Option("sequence_epochs", "--sequence-epochs", "epochs of the head with dchi-sequence (default: --epochs)", I,
               range=POS_INT),
        "lr", Option("lstm_lr", "--lstm-lr", "BiLSTM learning rate (the paper's)", F, default=1e-3, range=RATE),
        Option("head_lr", "--head-lr", "learning rate of the task head", F, default=1e-3, range=RATE),
        Option("lstm_epochs", "--lstm-epochs", "epochs of the BiLSTM (default: --epochs, the equal budget: same "
               "optimizer steps and examples as the transformer; the record says when budgets differ)", I,
               range=POS_INT),
        Option("lstm_hidden", "--lstm-hidden", "BiLSTM hidden size", I, default=256, range=POS_INT),
        "device", "seed", "force", "bf16",
        task={"required": True},
        schemes={"default": "none,dchi-sequence,dchi-token,dchi-text",
                 "help": "comma-separated: none, dchi-sequence, dchi-token, dchi-text"},
        etas={"default": "65.6", "help": "eta values for the private schemes"},
        out={"help": "results folder", "writes": "dir", "required": True},
        model={"help": "a local Hugging Face model folder, e.g. a `dchi pretrain` OUT/encoder folder (default: "
                       "packaged MiniLM)", "group": ""},
        batch_size={"default": 32}, epochs={"default": 3},
        lr={"default": None, "help": "transformer learning rate (default: the paper's, section 6.1: 2e-5 on sst2, "
                                     "4e-5 on qqp and on mrpc, which stands in for QQP)"},
        seed={"help": "EXPERIMENTS ONLY: makes the noise, data order, initialisation and dropout reproducible"},
        force={"help": "recompute runs whose results exist (a result computed with other settings is refused "
                       "without it)"}, device={"group": ""}, bf16={"group": ""})
    f.set_defaults(func=run_finetune)

    p = sub.add_parser("pretrain", help="privacy-adaptive MLM pretraining (vanilla / probability / denoising)",
                       description="Warm up an MLM head tied to the input embeddings on clean text, then continue "
                                   "MLM on a public corpus privatized on the fly at --eta, with the user-side "
                                   "embedding table frozen. Checkpoints every --checkpoint-every steps; --resume "
                                   "continues. Writes OUT/encoder (a model folder for `dchi finetune --model`), "
                                   "OUT/mlm_head.safetensors and OUT/pretrain.json.")
    add(p, Option("objective", "--objective", "MLM objective", choices=MLM_OBJECTIVES, required=True),
        "eta", "out", Option("scheme", "--scheme", "d_chi scheme of the privatized input: dchi-text (M_txt) or "
                             "dchi-token (M_rep)", default="dchi-text", choices=("dchi-text", "dchi-token")),
        Option("steps", "--steps", "privatized adaptation steps", I, default=200, range=POS_INT),
        Option("warmup_steps", "--warmup-steps", "clean head warm-up steps", I, default=100, range=NONNEG_INT),
        Option("init_head", "--init-head", "a warmed-up head (OUT/mlm_head_warm.safetensors of an earlier run): skip "
               "the warm-up"), "batch_size", "max_length", "lr",
        Option("head_lr", "--head-lr", "learning rate of the MLM head", F, default=1e-3, range=RATE),
        Option("mask_prob", "--mask-prob", "fraction of tokens masked for MLM", F, default=0.15,
               range=Range(lo=0, hi=1, lo_open=True)),
        "draws",
        Option("checkpoint_every", "--checkpoint-every", "checkpoint every N steps", I, default=50, range=POS_INT),
        Option("stop_after", "--stop-after", "run at most N steps now, checkpoint, and exit (resume later)", I,
               range=POS_INT), "resume",
        Option("eval_size", "--eval-size", "held-out corpus texts for masked accuracy", I, default=256, range=POS_INT),
        Option("corpus", "--corpus", "'wiki' (packaged) or a text file, one text per line", default="wiki"),
        Option("corpus_limit", "--corpus-limit", "use the first N corpus texts", I, range=POS_INT),
        "model", "device", "seed", "bf16",
        eta={"required": True, "help": "the fine-tuning eta"}, out={"help": "output folder", "writes": "dir",
                                                                     "required": True},
        batch_size={"default": 16}, max_length={"default": 64, "group": ""}, lr={"default": 5e-5,
                                                                                 "help": "encoder learning rate"},
        draws={"default": 10, "help": "perturbations per masked token (probability MLM)"},
        resume={"help": "continue from OUT/checkpoint.pt"}, model={"group": ""}, device={"group": ""},
        bf16={"group": ""}, seed={"help": "EXPERIMENTS ONLY: makes noise, masks and order reproducible"})
    p.set_defaults(func=run_pretrain)


def run_finetune(args: argparse.Namespace) -> int:
    from ..errors import require
    from ..schemes import get
    from ..training import private_finetune as pf

    modes = [get(name).finetune_mode if get(name).release == "once" else "null" for name in args.schemes]
    require(all(get(n).release in ("none", "once") for n in args.schemes),
            "dchi finetune runs the schemes none, dchi-sequence, dchi-token and dchi-text")
    encoders = list(args.encoders)
    require(all(e in FINETUNE_ENCODERS for e in encoders), f"--encoders: choose from {', '.join(FINETUNE_ENCODERS)}")
    warn_seed(args)
    configs = pf.grid_configs(modes, encoders, tuple(args.etas), epochs=args.epochs,
                              sequence_epochs=args.sequence_epochs, lstm_epochs=args.lstm_epochs, log=say,
                              batch_size=args.batch_size, lr=args.lr or pf.paper_lr(args.task), lstm_lr=args.lstm_lr,
                              head_lr=args.head_lr, lstm_hidden=args.lstm_hidden, seed=args.seed, bf16=args.bf16)
    grid = pf.GridSettings(task=args.task, model=args.model, data_dir=args.data_dir, train_limit=args.train_limit,
                           dev_limit=args.dev_limit, max_length=args.max_length, tag=args.tag, device=args.device)
    pf.run_grid(grid, configs, args.out, force=args.force, log=say,
                equal_budget=args.lstm_epochs in (None, args.epochs) and args.sequence_epochs in (None, args.epochs))
    return 0


def run_pretrain(args: argparse.Namespace) -> int:
    from ..schemes import get
    from ..training import mlm

    config = mlm.PretrainConfig(
        objective=args.objective, eta=args.eta, mechanism=get(args.scheme).mechanism, steps=args.steps,
        warmup_steps=args.warmup_steps, batch_size=args.batch_size, max_length=args.max_length, lr=args.lr,
        head_lr=args.head_lr, mask_prob=args.mask_prob, draws=args.draws, checkpoint_every=args.checkpoint_every,
        eval_size=args.eval_size, corpus=args.corpus, corpus_limit=args.corpus_limit, seed=args.seed)
    if args.init_head:
        mlm.load_mlm_head(args.init_head)  # exists and is a head, before the encoder is loaded
    warn_seed(args)
    rec = mlm.Pretrainer(config, args.out, model=args.model, init_head=args.init_head, log=say,
                         device=args.device, bf16=args.bf16 or "auto").run(resume=args.resume,
                                                                           stop_after=args.stop_after)
    if rec["finished"]:
        say(f"wrote {Path(args.out) / 'pretrain.json'} and the encoder folder {rec['encoder_dir']}")
    else:
        say(f"stopped after --stop-after steps; continue with --resume (checkpoint in {args.out})")
    return 0
