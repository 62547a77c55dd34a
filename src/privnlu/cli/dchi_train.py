"""``privnlu dchi finetune`` and ``privnlu dchi pretrain``: training under d_chi-privacy (Qu et al. 2021, 3.3-3.4)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from typing import TYPE_CHECKING

from ..choices import FINETUNE_ENCODERS, FINETUNE_MODES, MLM_OBJECTIVES
from ..errors import PrivnluError
from .common import add_bf16_arg, positive_int, say, warn_seed
from .dchi import eta_list

if TYPE_CHECKING:
    from ..training import private_finetune as pf


def name_list(choices: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        items = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in items if x not in choices]
        if not items or bad:
            raise argparse.ArgumentTypeError(f"'{text}': choose from {', '.join(choices)}")
        return items
    return parse


def register(sub: argparse._SubParsersAction) -> None:
    """``dchi finetune`` and ``dchi pretrain`` (``sub``: the ``dchi`` group's subcommands)."""
    f = sub.add_parser("finetune", help="privacy-constrained fine-tuning: null / sequence / token / text modes",
                       description="The user privatizes train and dev examples once (d_chi, eta); the provider "
                                   "fine-tunes on privatized input only, never updating the user-side parts. "
                                   "Writes one results JSON per (encoder, mode, eta) into --out, and beside it the "
                                   "run's model folder (same name without .json: Hugging Face layout, model card; "
                                   "`privnlu predict --run` applies it); runs whose JSON "
                                   "already exists are skipped, and an interrupted run continues from its last "
                                   "epoch on the same privatized data (kept in --out until its runs finish).")
    f.add_argument("--task", required=True, help="e.g. sst2, mrpc")
    f.add_argument("--modes", type=name_list(FINETUNE_MODES), default=list(FINETUNE_MODES), help="comma list (default: all four)")
    f.add_argument("--encoders", type=name_list(FINETUNE_ENCODERS), default=["transformer"],
                   help="transformer and/or bilstm (default: transformer)")
    f.add_argument("--etas", type=eta_list, default=(65.6,), help="eta values for the private modes (default: 65.6)")
    f.add_argument("--out", required=True, help="results folder")
    f.add_argument("--model", help="a local Hugging Face model folder, e.g. a `dchi pretrain` OUT/encoder folder (default: MiniLM)")
    f.add_argument("--tag", default="", help="label added to the results file names and records (e.g. the checkpoint)")
    f.add_argument("--data-dir", help="GLUE data folder (default: ../shared/data/glue)")
    f.add_argument("--train-limit", type=positive_int, help="use the first N training examples")
    f.add_argument("--dev-limit", type=positive_int, help="use the first N dev examples")
    f.add_argument("--max-length", type=positive_int, default=128)
    f.add_argument("--batch-size", type=positive_int, default=32)
    f.add_argument("--epochs", type=positive_int, default=3)
    f.add_argument("--sequence-epochs", type=positive_int, help="epochs of the head in sequence mode (default: --epochs)")
    f.add_argument("--lr", type=float, help="transformer learning rate (default: the paper's, section 6.1: 2e-5 on "
                   "sst2, 4e-5 on qqp and on mrpc, which stands in for QQP)")
    f.add_argument("--lstm-lr", type=float, default=1e-3, help="BiLSTM learning rate (default: 1e-3, the paper's)")
    f.add_argument("--head-lr", type=float, default=1e-3)
    f.add_argument("--lstm-epochs", type=positive_int, help="epochs of the BiLSTM (default: --epochs, the equal budget: "
                   "same optimizer steps and examples as the transformer; the record says when budgets differ)")
    f.add_argument("--lstm-hidden", type=positive_int, default=256, help="BiLSTM hidden size")
    f.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu); privatization always runs on the CPU")
    f.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes the noise, data order, initialisation and dropout reproducible")
    f.add_argument("--force", action="store_true",
                   help="recompute runs whose results exist (a result computed with other settings is refused without it)")
    add_bf16_arg(f)
    f.set_defaults(func=run_finetune)

    p = sub.add_parser("pretrain", help="privacy-adaptive MLM pretraining (vanilla / probability / denoising)",
                       description="Warm up an MLM head tied to the input embeddings on clean text, then continue "
                                   "MLM on a public corpus privatized on the fly at --eta, with the user-side "
                                   "embedding table frozen. Checkpoints every --checkpoint-every steps; --resume "
                                   "continues. Writes OUT/encoder (a model folder for `dchi finetune --model`), "
                                   "OUT/mlm_head.safetensors and OUT/pretrain.json.")
    p.add_argument("--objective", required=True, help=f"one of {', '.join(MLM_OBJECTIVES)}")
    p.add_argument("--eta", type=float, required=True, help="the fine-tuning eta")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--dchi-mechanism", default="text", choices=["text", "rep"],
                   help="d_chi release form of the privatized input: text (M_txt, default) or rep (M_rep)")
    p.add_argument("--steps", type=int, default=200, help="privatized adaptation steps (default: 200)")
    p.add_argument("--warmup-steps", type=int, default=100, help="clean head warm-up steps (default: 100)")
    p.add_argument("--init-head", help="a warmed-up head (OUT/mlm_head_warm.safetensors of an earlier run): skip the warm-up")
    p.add_argument("--batch-size", type=positive_int, default=16)
    p.add_argument("--max-length", type=positive_int, default=64)
    p.add_argument("--lr", type=float, default=5e-5, help="encoder learning rate")
    p.add_argument("--head-lr", type=float, default=1e-3)
    p.add_argument("--mask-prob", type=float, default=0.15, help="fraction of tokens masked for MLM")
    p.add_argument("--draws", type=positive_int, default=10, help="perturbations per masked token (probability MLM)")
    p.add_argument("--checkpoint-every", type=positive_int, default=50, help="checkpoint every N steps")
    p.add_argument("--stop-after", type=positive_int, help="run at most N steps now, checkpoint, and exit (resume later)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--eval-size", type=positive_int, default=256, help="held-out corpus texts for masked accuracy")
    p.add_argument("--corpus", default="wiki", help="'wiki' (packaged) or a text file, one text per line")
    p.add_argument("--corpus-limit", type=positive_int, help="use the first N corpus texts")
    p.add_argument("--model", help="a local Hugging Face model folder (default: packaged MiniLM)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu); privatization always runs on the CPU")
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes noise, masks and order reproducible")
    add_bf16_arg(p)
    p.set_defaults(func=run_pretrain)


def run_finetune(args: argparse.Namespace) -> int:
    from ..io import write_json_atomic
    from ..models.saving import export_dchi_model
    from ..rng import SecretGenerator
    from ..training import private_finetune as pf

    if args.lr is None:
        args.lr = pf.paper_lr(args.task)
    configs, skipped = [], False
    for mode in args.modes:  # mode, eta outermost: all encoders of a (mode, eta) share one privatized copy
        for eta in ([None] if mode == "null" else args.etas):
            for encoder in args.encoders:
                if mode == "sequence" and encoder == "bilstm":
                    skipped = True
                    continue
                epochs = {"sequence": args.sequence_epochs}.get(mode) or (args.lstm_epochs if encoder == "bilstm" else None) or args.epochs
                configs.append(pf.FinetuneConfig(mode=mode, encoder=encoder, eta=eta, epochs=epochs,
                                                 batch_size=args.batch_size, lr=args.lr, lstm_lr=args.lstm_lr,
                                                 head_lr=args.head_lr, lstm_hidden=args.lstm_hidden, seed=args.seed,
                                                 bf16=args.bf16 or "auto"))
    if not configs:
        raise PrivnluError("nothing to run: the chosen modes and encoders have no valid combination")
    if skipped:
        say("skipping bilstm/sequence: sequence mode needs a pretrained user-side encoder")
    warn_seed(args)
    out = Path(args.out)
    todo = [(c, out / _file_name(args.task, args.tag, c)) for c in configs]
    todo = [(c, f) for c, f in todo if not _finished(f, _settings(args, c), force=args.force)]
    if not todo:
        say(f"all {len(configs)} runs already have results in {out}")
        return 0
    prep = pf.prepare(args.task, model=args.model, max_length=args.max_length, train_limit=args.train_limit,
                      dev_limit=args.dev_limit, data_dir=args.data_dir,
                      sequence_features=any(c.mode == "sequence" for c, _ in todo), device=args.device)
    rng = SecretGenerator(args.seed, warn=False)
    shared: dict[tuple[str, float | None], pf.Payloads] = {}  # one privatized copy per (mode, eta) for all encoders
    for i, (config, path) in enumerate(todo):
        key = (config.mode, config.eta)
        payload_file = out / f".payload_{args.task}{'_' + args.tag if args.tag else ''}_{config.mode}_eta{config.eta}.pt"
        if key not in shared:
            shared = {key: pf.load_or_privatize(prep, config.mode, config.eta, rng, payload_file)}
        ckpt = path.with_name(f".{path.stem}.ckpt.pt")
        res = pf.finetune(prep, config, payloads=shared[key], log=say, checkpoint=ckpt)
        rec = res.record
        rec["tag"] = args.tag
        rec["settings"] = _settings(args, config)
        rec["budget"] = pf.budget(rec["train_size"], config.batch_size, config.epochs)
        rec["equal_budget"] = args.lstm_epochs in (None, args.epochs) and args.sequence_epochs in (None, args.epochs)
        # the model folder first, the results JSON last (a JSON means the run, and its model, are complete)
        export_dchi_model(out / path.stem, record=rec, model=res.model, encoder=prep.encoder,
                          label_names=prep.task.label_names, pair=prep.pair, base_model=args.model)
        rec["model_dir"] = path.stem
        write_json_atomic(path, rec)
        ckpt.unlink(missing_ok=True)
        if all((c.mode, c.eta) != key for c, _ in todo[i + 1 :]):
            payload_file.unlink(missing_ok=True)
        say(f"{path.name}: dev score {rec['score']:.2f} ({rec['seconds']:.0f} s)")
    return 0


def _settings(args: argparse.Namespace, c: pf.FinetuneConfig) -> dict:
    """Everything that changes one fine-tuning run's result (recorded in its file, compared on a rerun)."""
    from dataclasses import asdict

    return {"task": args.task, "model": args.model, "data_dir": args.data_dir, "train_limit": args.train_limit,
            "dev_limit": args.dev_limit, "max_length": args.max_length, **asdict(c)}


def _finished(path: Path, settings: dict, *, force: bool) -> bool:
    """True if ``path`` holds this run's result; refuses (one line) a result computed with other settings."""
    from ..io import json_text, read_json

    if force or not path.exists():
        return False
    try:
        rec = read_json(path)
        old, _ = rec.get("settings"), rec["score"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        say(f"{path} is not a readable result; recomputing it")
        return False
    if old is None:
        raise PrivnluError(f"{path} records no settings (an older privnlu wrote it): move it away, or --force to recompute")
    new = json.loads(json_text(settings))
    diff = [f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if diff:
        raise PrivnluError(f"{path} holds a run computed with other settings ({'; '.join(diff[:4])}): use another "
                           "--out, or --force to recompute it")
    return True


def _file_name(task: str, tag: str, c: pf.FinetuneConfig) -> str:
    eta = "" if c.eta is None else f"_eta{c.eta:g}"
    return f"finetune_{task}{'_' + tag if tag else ''}_{c.encoder}_{c.mode}{eta}.json"


def run_pretrain(args: argparse.Namespace) -> int:
    from ..training import mlm

    config = mlm.PretrainConfig(
        objective=args.objective, eta=args.eta, mechanism=args.dchi_mechanism, steps=args.steps,
        warmup_steps=args.warmup_steps, batch_size=args.batch_size, max_length=args.max_length, lr=args.lr,
        head_lr=args.head_lr, mask_prob=args.mask_prob, draws=args.draws, checkpoint_every=args.checkpoint_every,
        eval_size=args.eval_size, corpus=args.corpus, corpus_limit=args.corpus_limit, seed=args.seed)
    if args.init_head:
        mlm.load_mlm_head(args.init_head)  # exists and is a head, before the encoder is loaded
    warn_seed(args)
    rec = mlm.Pretrainer(config, args.out, model=args.model, init_head=args.init_head, log=say,
                          device=args.device, bf16=args.bf16 or "auto").run(
        resume=args.resume, stop_after=args.stop_after)
    if rec["finished"]:
        say(f"wrote {Path(args.out) / 'pretrain.json'} and the encoder folder {rec['encoder_dir']}")
    else:
        say(f"stopped after --stop-after steps; continue with --resume (checkpoint in {args.out})")
    return 0
