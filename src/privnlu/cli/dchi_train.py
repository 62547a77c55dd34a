"""``privnlu dchi finetune`` and ``privnlu dchi pretrain``: training under d_chi-privacy (Qu et al. 2021, 3.3-3.4)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..params import POS_INT, Option, declared, given, name_list
from ..training.settings import FinetuneConfig, GridSettings, PretrainConfig
from .common import say, warn_seed
from .options import add


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
    add(f, *declared(GridSettings), "schemes",
        Option("encoders", "--encoders", "transformer and/or bilstm", name_list, default="transformer"), "etas",
        *declared(FinetuneConfig),
        Option("sequence_epochs", "--sequence-epochs", "epochs of the head with dchi-sequence (default: --epochs)", int,
               range=POS_INT),
        Option("lstm_epochs", "--lstm-epochs", "epochs of the BiLSTM (default: --epochs, the equal budget: same "
               "optimizer steps and examples as the transformer; the record says when budgets differ)", int,
               range=POS_INT), "out", "force",
        schemes={"default": "none,dchi-sequence,dchi-token,dchi-text",
                 "help": "comma-separated: none, dchi-sequence, dchi-token, dchi-text"},
        etas={"default": "65.6", "help": "eta values for the private schemes"}, lr={"default": None},
        out={"help": "results folder", "writes": "dir", "required": True},
        force={"help": "recompute runs whose results exist (a result computed with other settings is refused "
                       "without it)"})
    f.set_defaults(func=run_finetune)

    p = sub.add_parser("pretrain", help="privacy-adaptive MLM pretraining (vanilla / probability / denoising)",
                       description="Warm up an MLM head tied to the input embeddings on clean text, then continue "
                                   "MLM on a public corpus privatized on the fly at --eta, with the user-side "
                                   "embedding table frozen. Checkpoints every --checkpoint-every steps; --resume "
                                   "continues. Writes OUT/encoder (a model folder for `dchi finetune --model`), "
                                   "OUT/mlm_head.safetensors and OUT/pretrain.json.")
    add(p, *declared(PretrainConfig), "out",
        Option("scheme", "--scheme", "d_chi scheme of the privatized input: dchi-text (M_txt) or dchi-token (M_rep)",
               default="dchi-text", choices=("dchi-text", "dchi-token")),
        Option("init_head", "--init-head", "a warmed-up head (OUT/mlm_head_warm.safetensors of an earlier run): skip "
               "the warm-up"),
        Option("stop_after", "--stop-after", "run at most N steps now, checkpoint, and exit (resume later)", int,
               range=POS_INT), "resume", "model", "device", "bf16",
        out={"help": "output folder", "writes": "dir", "required": True}, model={"group": ""},
        device={"group": ""}, bf16={"group": ""}, resume={"help": "continue from OUT/checkpoint.json"})
    p.set_defaults(func=run_pretrain)


def run_finetune(args: argparse.Namespace) -> int:
    from ..errors import require
    from ..schemes import get
    from ..training import private_finetune as pf

    modes = [get(name).finetune_mode for name in args.schemes]
    require(all(m is not None for m in modes),
            "dchi finetune runs the schemes none, dchi-sequence, dchi-token and dchi-text")
    warn_seed(args)
    config = {k: v for k, v in given(FinetuneConfig, args).items() if k != "epochs"}
    config["lr"] = args.lr or pf.paper_lr(args.task)
    configs = pf.grid_configs(modes, list(args.encoders), tuple(args.etas), epochs=args.epochs, log=say,
                              sequence_epochs=args.sequence_epochs, lstm_epochs=args.lstm_epochs, **config)
    pf.run_grid(GridSettings(**given(GridSettings, args)), configs, args.out, force=args.force, log=say,
                equal_budget=args.lstm_epochs in (None, args.epochs) and args.sequence_epochs in (None, args.epochs))
    return 0


def run_pretrain(args: argparse.Namespace) -> int:
    from ..schemes import get
    from ..training import mlm

    config = PretrainConfig(**given(PretrainConfig, args), mechanism=get(args.scheme).mechanism)
    if args.init_head:
        mlm.load_mlm_head(args.init_head)  # exists and is a head, before the encoder is loaded
    warn_seed(args)
    rec = mlm.Pretrainer(config, args.out, model=args.model, init_head=args.init_head, log=say, device=args.device,
                         bf16=args.bf16).run(resume=args.resume, stop_after=args.stop_after)
    if rec["finished"]:
        say(f"wrote {Path(args.out) / 'pretrain.json'} and the encoder folder {Path(args.out) / rec['encoder_dir']}")
    else:
        say(f"stopped after --stop-after steps; continue with --resume (checkpoint in {args.out})")
    return 0
