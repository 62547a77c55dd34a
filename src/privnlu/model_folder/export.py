"""Export a finished run as a model folder (Hugging Face layout, ``privnlu.json``, model card): ``privnlu train``,
``privnlu federated``, ``privnlu dchi finetune`` and ``privnlu dchi pretrain``.

The folder is written by :func:`privnlu.models.saving.write_model_folder`; this module says what goes into its
``privnlu.json`` (how :mod:`privnlu.model_folder.predict` applies the model: the task, the encoder, the privacy scheme
from :mod:`privnlu.schemes` and how a query is encoded) and its card (:mod:`.card`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..models.encoder import SentenceEncoder
from ..models.heads import MLPHead
from ..models.saving import (BILSTM_DIR, encoder_info, encoder_origin, head_config, key_check, pipeline_header,
                             save_bilstm, task_info, write_model_folder)
from ..mechanisms.dchi_modes import FINETUNE_MODES, finetune_mode
from ..schemes import for_finetune_mode
from .card import dchi_card, federated_card, model_card, pretrain_card


def export_run_model(
    dest: str | Path,
    *,
    record: dict,
    head: nn.Module,
    encoder: SentenceEncoder,
    label_names: tuple[str, ...],
    pair: bool,
    key_masks: torch.Tensor | None,
) -> Path:
    """Write a trained run's model folder ``dest`` atomically (see the module docstring); returns ``dest``.

    ``record`` is the run's results record (:func:`privnlu.training.engine.train_run`); ``key_masks`` the
    mask pool (only its check is written).
    """
    spec = record["spec"]
    joint = spec["mode"] == "joint"
    cfg = head_config(head, label_names=label_names)
    train = spec["train"]
    needs_key = (key_masks is not None and train["eval_mask"] == "pool" and not cfg["abs_input"])
    pipeline = {
        **pipeline_header("train", record["label"]),
        "task": task_info(record["task"], record["metric"], label_names, pair),
        "encoder": encoder_info(spec.get("model"), encoder, saved=joint, max_length=spec["max_length"],
                                bf16=spec["bf16"], architecture=record["encoder"].get("architecture")),
        "mode": spec["mode"],
        "privacy": {
            "scheme": record["scheme"],
            "variant": record["variant"],
            "m": record["m"],
            "k": record["k"],
            "inter": record["inter"],
            "eta": spec.get("eta"),
            "eval_mask": train["eval_mask"],
            "abs_input": cfg["abs_input"],
            "key_required": needs_key,
            "key_check": key_check(key_masks) if needs_key else None,
            "noisy_queries": bool((spec.get("dp") or {}).get("noisy_queries", False)),
            "dp": record.get("dp"),  # the calibration: mechanism, clip, noise (public), epsilon, delta
        },
        "eval": record["eval"],
        "score": record["score"],
        "majority": record.get("majority"),  # the majority-class score: predict warns where the score reaches it
    }
    return write_model_folder(dest, pipeline=pipeline, card=lambda: model_card(pipeline, record), head=head,
                              label_names=label_names, encoder_model=encoder.model if joint else None,
                              tokenizer=encoder.tokenizer if joint else None)


def export_federated_model(dest: str | Path, *, record: dict, cfg: Any, head: nn.Module, encoder: SentenceEncoder,
                           label_names: tuple[str, ...], pair: bool) -> Path:
    """The global model of a finished ``privnlu federated`` run (head; plus the encoder in joint mode), as a train
    run's model folder. Queries are applied as the server evaluated: unmixed and unmasked. The clients' mask pools
    live only in their Flower node state and are never written anywhere, so there is no key to ask for."""
    joint = cfg.mode == "joint"
    hc = head_config(head, label_names=label_names)
    pipeline = {
        **pipeline_header("federated", record["label"]),
        "task": task_info(record["task"], record["metric"], label_names, pair),
        "encoder": encoder_info(cfg.model or None, encoder, saved=joint, max_length=cfg.max_length, bf16=False,
                                architecture=record["encoder"].get("architecture")),
        "mode": cfg.mode,
        "privacy": {
            "scheme": cfg.privacy.name,
            "variant": cfg.privacy.variant,
            "m": cfg.m,
            "k": cfg.k,
            "inter": False,
            "eval_mask": "none",  # the server's evaluation: it holds no key
            "abs_input": hc["abs_input"],
            "key_required": False,
            "key_check": None,
            "noisy_queries": False,
            "dp": None,  # DP instance encoding: none (DP-FedSGD is in the federated block)
        },
        "federated": {
            "clients": cfg.clients, "rounds": cfg.rounds, "algorithm": cfg.algorithm, "local_steps": cfg.local_steps,
            "fraction_train": cfg.fraction_train, "pool_sizes": record["pool_sizes"], "secagg": cfg.secagg,
            "local_clip": cfg.local_clip, "local_noise": cfg.local_noise, "train_embeddings": cfg.train_embeddings,
            "client_eval_mask": cfg.eval_mask, "dp_fedsgd": record.get("dp"),
            "client_dp": record.get("client_dp"),
            "score_source": record["score_source"], "client_score": record["score"]
            if record["score_source"].startswith("clients") else None,
        },
        "eval": record["eval"],
        "score": record["server_score"],
    }
    return write_model_folder(dest, pipeline=pipeline, card=lambda: federated_card(pipeline, record), head=head,
                              label_names=label_names, encoder_model=encoder.model if joint else None,
                              tokenizer=encoder.tokenizer if joint else None)


def export_dchi_model(dest: str | Path, *, record: dict, model: nn.Module, encoder: SentenceEncoder,
                      label_names: tuple[str, ...], pair: bool, base_model: str | None) -> Path:
    """One finished ``privnlu dchi finetune`` run's provider model (see :mod:`privnlu.training.private_finetune`).

    ``model`` is the run's :class:`~privnlu.training.private_finetune.Classifier` (a transformers encoder body, or
    a BiLSTM, + a linear layer on the pooled ``h(x)``), or in ``sequence`` mode the MLP head on ``h(x) + N``;
    ``encoder`` the user-side (base) encoder. The transformer body is saved with ``save_pretrained`` in
    ``encoder/`` (``AutoModel`` loads it; it is not an ``AutoModelForSequenceClassification``: privnlu's classifier
    is a linear layer on the CLS/mean-pooled last hidden state, not on BERT's pooler, and the folder's root
    ``config.json`` makes transformers say so), the BiLSTM in ``bilstm/`` (its tokenizer in ``encoder/``), the
    linear layer as a privnlu head (:class:`MLPHead` without hidden layers) in ``head/``. ``sequence`` mode keeps
    the base encoder unchanged, so it is named, not copied, as for a frozen train run.
    """
    from ..models.bilstm import BiLSTMEncoder

    mode, eta = finetune_mode(record["mode"]), record["eta"]
    sequence = mode.on_representation
    body = None if sequence else model.body
    bilstm = isinstance(body, BiLSTMEncoder)
    if sequence:
        head = model
    else:
        head = MLPHead(model.out.in_features, model.out.out_features, hidden=(), dropout=0.0)
        head.net[0].load_state_dict(model.out.state_dict())
    pipeline = {
        **pipeline_header("dchi-finetune", _dchi_label(record), version=2),
        "task": task_info(record["task"], record["metric"], label_names, pair),
        "encoder": {**encoder_info(base_model, encoder, saved=body is not None and not bilstm,
                                   max_length=record["max_length"], bf16=record["bf16_used"],
                                   architecture="BiLSTMEncoder" if bilstm else None),
                    "body": "base" if sequence else ("bilstm" if bilstm else "transformer")},
        "mode": mode.name,
        "privacy": {"scheme": for_finetune_mode(mode.name).name, "variant": f"dchi-{mode}", "eta": eta,
                    "key_required": False, "abs_input": False},
        "dchi": {"mode": mode.name, "eta": eta, "mechanism": DCHI_MECHANISMS[mode.name], "encoder": record["encoder"],
                 # the user-side token table: the base encoder's (text mode fine-tunes the provider's own copy)
                 "user_side": mode.user_side},
        "eval": {record["eval_split"]: record["metrics"]},
        "score": record["score"],
        "majority": record.get("majority"),
    }
    if not bilstm and body is not None:
        pipeline["encoder"]["architecture"] = (body.config.architectures or [type(body).__name__])[0]
    if bilstm:
        pipeline["encoder"]["hidden_size"] = body.dim
    return write_model_folder(dest, pipeline=pipeline, card=lambda: dchi_card(pipeline, record), head=head,
                              label_names=label_names, encoder_model=None if bilstm else body,
                              tokenizer=None if sequence else encoder.tokenizer,
                              extra=(lambda tmp: save_bilstm(body, tmp / BILSTM_DIR)) if bilstm else None)


#: the d_chi release of each ``dchi finetune`` mode (Qu et al. 2021, section 3.3)
DCHI_MECHANISMS = {m.name: m.mechanism.symbol if m.mechanism else None for m in FINETUNE_MODES.values()}


def _dchi_label(record: dict) -> str:
    eta = "" if record["eta"] is None else f"-eta{record['eta']:g}"
    return f"{record['task']}-dchi-{record['encoder']}-{record['mode']}{eta}"


def export_pretrained_encoder(dest: str | Path, *, model: nn.Module, tokenizer: Any, record: dict,
                              base_model: str | None) -> Path:
    """``privnlu dchi pretrain``'s adapted encoder: ``save_pretrained`` (safetensors) + tokenizer, no local path,
    and a model card (objective, eta, mechanism, steps, the measured masked-token accuracies). No ``privnlu.json``:
    it has no task head, it is a base encoder for ``privnlu dchi finetune --model``."""
    origin = encoder_origin(base_model)
    return write_model_folder(dest, card=lambda: pretrain_card(record, origin), encoder_model=model,
                              tokenizer=tokenizer)
