"""Apply a trained run to new text.

>>> from privnlu.model_folder.predict import load
>>> model = load("runs/train/sst2-texthide-intra-m256-k4")          # doctest: +SKIP
>>> model.predict(["a gripping, beautifully acted film"])           # doctest: +SKIP
[{'text': 'a gripping, beautifully acted film', 'prediction': '1', 'label_id': 1, 'probability': 0.93}]

:func:`load` takes the folder ``privnlu train`` wrote (or its ``model/`` subfolder, which may be copied elsewhere),
reads and checks ``model/privnlu.json``, loads the head and the encoder (the fine-tuned one saved in the folder, or
the unchanged base encoder of a frozen run, checked by fingerprint), and encodes every query as the run's
evaluation did (:func:`privnlu.training.trainer.fit`): never mixed; with ``--eval-mask pool`` (the default)
multiplied by a mask from the owner's secret pool (TextHide), after clipping and with the same noise for DP
instance encoding (unless the run used clean queries); a DP-SGD model takes the raw representations (its
guarantee is its training's, stated by :meth:`Predictor.describe`).

**Deterministic by default.** Where a query's encoding is random (a pool mask, a fresh mask for ``m = inf``, DP
noise, d_chi noise), :meth:`Predictor.predict` returns the head's class probabilities averaged over the
encodings, so the same input always gets the same label and probability:

* a TextHide pool of at most :data:`QUERY_DRAWS` masks: every mask of the pool, exactly (the expected prediction
  under the evaluation's uniform mask choice);
* otherwise (a larger pool, ``m = inf``, DP instance encoding): :data:`QUERY_DRAWS` encodings;
* d_chi privatization, which runs an encoder on each privatized query: :data:`ENCODER_DRAWS` privatizations.

Those draws come from a generator seeded by an HMAC-SHA256 of the query (and its pair) keyed with a digest of the
owner's mask pool where the model has one (so which masks a query gets reveals nothing without the key); a model
without a key uses a public key, which is harmless: the draws never leave this process, only their average does.
``samples=N`` (``--samples N``) instead averages ``N`` fresh encodings from the OS CSPRNG; ``N = 1`` is the
paper's stochastic inference (one random pool mask per query, as the recorded dev score was measured).

The pool is key material and is not in the model folder: pass ``key=`` (``--key``), or keep the run folder's own
``key.pt``, which is used when no key is given. A key from another run is refused (``privnlu.json`` records a short
check of the pool). A head trained on ``|x|`` (``--abs-input``) needs no key: the masks are invisible to it.

A ``privnlu federated`` run's ``model/`` is applied as its server evaluated it (unmixed and unmasked: the clients'
pools never leave them, so no key exists). A ``privnlu dchi finetune`` model folder (:class:`DchiPredictor`)
privatizes each query on the user side with the run's mechanism and eta, as its dev set was.

**A received folder is data, never code.** Loading runs no Python from the folder (``trust_remote_code=False``; a
config with ``auto_map`` is refused), never contacts the model hub (``local_files_only=True`` and
``HF_HUB_OFFLINE=1`` while loading), refuses NaN or infinite weights, and checks ``privnlu.json`` field by field.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import hmac
import io
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

import torch
from torch import nn

from ..errors import PrivnluError
from ..io import read_json
from ..mechanisms.dchi_modes import finetune_mode
from ..mechanisms.texthide import MaskPool, TextHide, parse_m
from ..models.encoder import SentenceEncoder, load_encoder, refuse_custom_code
from ..models.features import extract_features
from ..models.packaged import name_for_hub_id
from ..models.saving import (ENCODER_DRAWS, HEAD_DIR, PIPELINE_FILE, QUERY_DRAWS, check_finite_weights, encoder_dir,
                             key_check, load_head, read_pipeline)
from ..params import plural
from ..rng import SecretGenerator
from .received import check_dp_claims
from ..data.dataset import TextDataset
from ..schemas import recorded_path
from ..schemes import Scheme, from_record
from .predict_inputs import open_inputs

if TYPE_CHECKING:
    from ..mechanisms.dchi import TokenSpace

KEY_FILE = "key.pt"


def find_model_dir(run: str | Path) -> tuple[Path, Path | None]:
    """``(model folder, run folder or None)`` for a train or federated run folder, a model folder, or a
    ``dchi finetune`` result JSON (its model folder is beside it, the same name without ``.json``)."""
    p = Path(run)
    if p.is_file() and p.suffix == ".json" and (p.with_suffix("") / PIPELINE_FILE).is_file():
        return p.with_suffix(""), None
    if not p.is_dir():
        raise PrivnluError(f"--run {p}: no such folder")
    if (p / "model" / PIPELINE_FILE).is_file():
        return p / "model", p
    if (p / PIPELINE_FILE).is_file():
        return p, (p.parent if (p.parent / "result.json").is_file() else None)
    if (p / "result.json").is_file():
        raise PrivnluError(f"--run {p}: this run has no model folder (model/{PIPELINE_FILE}); runs trained before "
                           "privnlu saved models must be trained again")
    raise PrivnluError(f"--run {p}: not a privnlu train run (no model/{PIPELINE_FILE} and no result.json), nor a "
                       "privnlu model folder")


@dataclass
class Predictor:
    """A loaded model: encoder, head and the query encoding of its scheme. Use :meth:`predict`."""

    pipeline: dict
    encoder: SentenceEncoder
    head: nn.Module
    hider: TextHide | None = field(repr=False)
    device: str = "cpu"
    key_source: str | None = None  # where the key came from ("--key", "run folder") or None
    #: a scheme that releases once (d_chi): each query is privatized on the user's side as the dev set was
    release: Scheme | None = field(default=None, repr=False)
    rng: SecretGenerator | None = field(default=None, repr=False)
    #: None: deterministic (see the module docstring); N: the average of N fresh encodings (1: the paper's inference)
    samples: int | None = None

    @property
    def labels(self) -> list[str]:
        return list(self.pipeline["task"]["labels"])

    @property
    def is_pair(self) -> bool:
        return bool(self.pipeline["task"]["pair"])

    @property
    def is_regression(self) -> bool:
        return bool(self.pipeline["task"]["regression"])

    def describe(self) -> str:
        """One line: the model, how its queries are encoded, and how a prediction is made of the encodings."""
        p, enc = self.pipeline["privacy"], self.pipeline["encoder"]
        scheme = from_record(p)
        model = f"{self.pipeline['label']} ({self.pipeline['mode']}, {enc['name']})"
        if self.release is not None:
            return f"{model}; each query privatized on the user's side with {scheme.describe()}; {self.averaging()}"
        how = scheme.describe_queries(p, joint=self.pipeline["mode"] == "joint", hider=self.hider,
                                      key_source=self.key_source,
                                      federated=self.pipeline.get("trained_by") == "federated")
        return f"{model}; {how}" + (f"; {self.averaging()}" if self.stochastic else "")

    @property
    def stochastic(self) -> bool:
        """Whether a query's encoding is random (so that a prediction averages several encodings)."""
        if self.release is not None:
            return True
        h = self.hider
        if h is None:
            return False
        return h.pool.m != 0 or bool(getattr(h, "noisy_queries", False))

    def averaging(self) -> str:
        """How a prediction is made of a query's random encodings, in words."""
        if self.samples is not None:
            return (f"prediction from {plural(self.samples, 'fresh random encoding')}"
                    + (" (the paper's stochastic inference)" if self.samples == 1 else ", averaged"))
        if self._enumerates_pool():
            return f"prediction averaged over all {len(self.hider.pool)} masks of the pool (deterministic)"
        n = ENCODER_DRAWS if self.release is not None else QUERY_DRAWS
        return f"prediction averaged over {n} encodings seeded from the query (deterministic)"

    def _enumerates_pool(self) -> bool:
        """A plain TextHide pool small enough to average over every mask exactly."""
        h = self.hider
        return (h is not None and type(h) is TextHide and h.pool.m not in (0, math.inf)
                and len(h.pool) <= QUERY_DRAWS)

    def query_rng(self, text: str, pair: str | None) -> SecretGenerator:
        """The generator of a query's draws in deterministic mode: seeded by an HMAC-SHA256 of the query, keyed
        with a digest of the owner's pool where there is one (see the module docstring)."""
        masks = self.hider.pool.masks if self.hider is not None else None
        key = b"" if masks is None else hashlib.sha256(masks.to(torch.int8).numpy().tobytes()).digest()
        digest = hmac.new(key, b"privnlu-query\0" + json.dumps([text, pair]).encode(), hashlib.sha256).digest()
        return SecretGenerator(int.from_bytes(digest[:16], "big"), warn=False)

    def encode_queries(self, x: torch.Tensor) -> torch.Tensor:
        """The run's evaluation-time encoding of unmixed representations, one fresh draw per row."""
        return x if self.hider is None else self.hider.mask_only(x)

    def _encodings(self, x: torch.Tensor, text: str, pair: str | None, samples: int | None) -> torch.Tensor:
        """The encodings of one query ``x`` (shape (d,)) whose head outputs are averaged: (draws, d)."""
        h = self.hider
        assert h is not None
        if samples is None and self._enumerates_pool():
            return x.unsqueeze(0) * h.pool.masks.to(dtype=x.dtype)
        rng = (self.rng or SecretGenerator()) if samples is not None else self.query_rng(text, pair)
        saved, h.rng = h.rng, rng
        try:
            return h.mask_only(x.unsqueeze(0).repeat(samples or QUERY_DRAWS, 1))
        finally:
            h.rng = saved

    def _head(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.head(x[i: i + 1024].to(self.device)).float().cpu() for i in range(0, len(x), 1024)])

    def _activate(self, out: torch.Tensor) -> torch.Tensor:
        """Class probabilities (softmax), or a regression's scores unchanged."""
        return out if self.is_regression else out.softmax(-1)

    def _features(self, texts: list[str], pairs: list[str] | None, batch_size: int, progress: bool) -> torch.Tensor:
        enc = self.pipeline["encoder"]
        return extract_features(self.encoder, texts, pairs, max_length=int(enc["max_length"]), batch_size=batch_size,
                                bf16=bool(enc["bf16"]), progress=progress, desc="predicting")

    def _released(self, texts: list[str], pairs: list[str] | None, x: torch.Tensor, rng: SecretGenerator) -> torch.Tensor:
        """A once-releasing scheme's user-side privatization of ``texts`` (clean representations ``x``)."""
        space = self.release.release_space(self.encoder)
        queries = TextDataset("queries", "predict", list(texts), [0] * len(texts), pairs)
        return self.release.release_features(self.encoder, space, queries, x, rng,
                                             max_length=int(self.pipeline["encoder"]["max_length"]),
                                             progress=False).features

    @torch.no_grad()
    def logits(self, texts: Sequence[str], pairs: Sequence[str] | None = None, *, batch_size: int = 64,
               progress: bool = False) -> torch.Tensor:
        """The head's outputs for ONE encoding of each query, drawn afresh from ``rng`` as the run's evaluation
        did, shape (n, classes), or (n, 1) for regression. :meth:`probabilities` is what :meth:`predict` uses."""
        texts, pairs = self.check_inputs(texts, pairs)
        if not texts:
            return torch.empty(0, max(1, len(self.labels)))
        x = self._features(texts, pairs, batch_size, progress)
        if self.release is not None:  # the provider sees only the user's privatized query
            x = self._released(texts, pairs, x, self.rng or SecretGenerator())
        return self._head(self.encode_queries(x))

    @torch.no_grad()
    def probabilities(self, texts: Sequence[str], pairs: Sequence[str] | None = None, *, batch_size: int = 64,
                      progress: bool = False, samples: int | None = None) -> torch.Tensor:
        """Class probabilities (n, classes), or regression scores (n, 1), averaged over each query's encodings:
        deterministic, or over ``samples`` fresh ones (default: the predictor's ``samples``)."""
        texts, pairs = self.check_inputs(texts, pairs)
        samples = check_samples(self.samples if samples is None else samples)
        if not texts:
            return torch.empty(0, max(1, len(self.labels)))
        x = self._features(texts, pairs, batch_size, progress)
        if not self.stochastic:
            return self._activate(self._head(self.encode_queries(x)))
        rows = []
        for i, text in enumerate(texts):
            pair = pairs[i] if pairs is not None else None
            if self.release is not None:
                n = samples or ENCODER_DRAWS
                rng = (self.rng or SecretGenerator()) if samples is not None else self.query_rng(text, pair)
                z = self._released([text] * n, None if pair is None else [pair] * n, x[i: i + 1].repeat(n, 1), rng)
                z = self.encode_queries(z)
            else:
                z = self._encodings(x[i], text, pair, samples)
            rows.append(self._activate(self._head(z)).mean(0))
        return torch.stack(rows)

    def predict(self, texts: Sequence[str], pairs: Sequence[str] | None = None, *, batch_size: int = 64,
                progress: bool = False, samples: int | None = None) -> list[dict]:
        """One dict per text: ``text`` (``text_pair``), ``prediction`` (the label name, or the score for a
        regression task), and for classification ``label_id`` and ``probability`` (the head's softmax, averaged
        over the query's encodings: see the module docstring)."""
        texts, pairs = self.check_inputs(texts, pairs)
        out = self.probabilities(texts, pairs, batch_size=batch_size, progress=progress, samples=samples)
        if not bool(torch.isfinite(out).all()):
            bad = int((~torch.isfinite(out)).any(-1).nonzero()[0, 0])
            raise PrivnluError(f"the model's output for text {bad + 1} is NaN or infinite; no prediction written")
        rows = []
        for i, text in enumerate(texts):
            row: dict = {"text": text}
            if pairs is not None:
                row["text_pair"] = pairs[i]
            if self.is_regression:
                row["prediction"] = float(out[i, 0])
            else:
                j = int(out[i].argmax())
                row.update(prediction=self.labels[j], label_id=j, probability=round(float(out[i, j]), 6))
            rows.append(row)
        return rows

    def check_inputs(self, texts: Sequence[str], pairs: Sequence[str] | None) -> tuple[list[str], list[str] | None]:
        """``texts`` and ``pairs`` as lists of strings, refused (PrivnluError) where they do not fit the task."""
        if isinstance(texts, str):
            texts = [texts]
        if isinstance(pairs, str):
            pairs = [pairs]
        texts = [str(t) for t in texts]
        if self.is_pair and pairs is None:
            raise PrivnluError(f"task '{self.pipeline['task']['name']}' takes sentence pairs: give the second texts "
                               "(--text-pair, or --text-pair-col with --input)")
        if not self.is_pair and pairs is not None:
            raise PrivnluError(f"task '{self.pipeline['task']['name']}' takes single texts, not pairs")
        if pairs is not None:
            pairs = [str(t) for t in pairs]
            if len(pairs) != len(texts):
                raise PrivnluError(f"{len(texts)} texts but {len(pairs)} pair texts")
        return texts, pairs


def load(run: str | Path, *, key: str | Path | None = None, model: str | Path | None = None, device: str = "cpu",
         rng: SecretGenerator | None = None, samples: int | None = None, warn: bool = True) -> Predictor:
    """Load a trained run (see the module docstring). A model whose dev score's 95 % interval reaches the
    majority-class score is loaded with one warning line on stderr (:func:`utility_warning`; ``warn=False``: the
    caller says it).

    Args:
        run: the folder ``privnlu train`` wrote, or its ``model/`` subfolder.
        key: the owner's key file (the run's mask pool); default: the run folder's ``key.pt`` where the scheme
            needs one.
        model: for a frozen run, the base encoder's folder when it is not where the run found it (checked by
            fingerprint).
        device: ``cpu`` or ``cuda``.
        rng: the generator of fresh query masks and noise (``samples``, :meth:`Predictor.logits`; default: the OS
            CSPRNG).
        samples: None for deterministic predictions; N to average N fresh random encodings per query (1: the
            paper's stochastic inference).
        warn: write :func:`utility_warning`'s line to stderr where it applies.
    """
    predictor = _load_model(run, key=key, model=model, device=device, rng=rng, samples=samples)
    warning = utility_warning(predictor.pipeline) if warn else None
    if warning:
        sys.stderr.write(warning + "\n")
    return predictor


def utility_warning(pipeline: dict) -> str | None:
    """One line where the model's recorded dev score's 95 % interval reaches the majority-class score (the score
    itself where no interval was recorded; nothing where the folder records no majority score)."""
    from .card import learned_nothing, score_ci

    if not learned_nothing(pipeline):
        return None
    ci = score_ci(pipeline)
    score = f"{float(pipeline['score']):.2f}" + (f" (95 % CI {ci[0]:.2f} to {ci[1]:.2f})" if ci is not None else "")
    return (f"privnlu: warning: {pipeline['label']} has no useful utility: its dev score {score} reaches the "
            f"majority-class score {float(pipeline['majority']['score']):.2f}, so its answers may be no better than "
            "always giving the most frequent label")


def _load_model(run: str | Path, *, key: str | Path | None, model: str | Path | None, device: str,
                rng: SecretGenerator | None, samples: int | None) -> Predictor:
    """:func:`load` without the warning."""
    samples = check_samples(samples)
    check_device(device)
    model_dir, run_dir = find_model_dir(run)
    pipeline = read_pipeline(model_dir)
    check_dp_claims(pipeline, model_dir / PIPELINE_FILE)  # DP-IE and federated guarantees, before any weight
    for folder in (model_dir, *sorted(d for d in model_dir.iterdir() if d.is_dir())):
        refuse_custom_code(folder)
    with offline():
        if pipeline.get("trained_by") == "dchi-finetune":
            if key is not None:
                raise PrivnluError("--key: a d_chi model has no key (its queries are privatized with public parameters)")
            return _load_dchi(pipeline, model_dir, run_dir, model, device, rng or SecretGenerator(), samples)
        privacy = pipeline["privacy"]
        # the scheme checks its own guarantee (DP-SGD: recomputed, never trusted), before any heavy work
        from_record(privacy).check_received(privacy.get("dp"), where=str(model_dir / PIPELINE_FILE))
        pool = _load_key(privacy, int(pipeline["encoder"]["hidden_size"]), key, run_dir)  # before any heavy work
        head = load_head(model_dir / HEAD_DIR, device=device)
        encoder = _load_encoder(pipeline, model_dir, run_dir, model, device)
    if encoder.dim != int(pipeline["encoder"]["hidden_size"]):
        raise PrivnluError(f"the encoder has width {encoder.dim}, the head expects {pipeline['encoder']['hidden_size']}")
    rng = rng or SecretGenerator()
    scheme = from_record(privacy)
    hider = scheme.query_encoder(privacy, dim=encoder.dim, pool=pool[0] if pool else None, rng=rng)
    return Predictor(pipeline, encoder, head, hider, device, pool[1] if pool else None,
                     release=scheme.query_privatizer(), rng=rng, samples=samples)


def check_samples(samples: int | None) -> int | None:
    """``samples`` (None, or a positive whole number), refused in one line otherwise."""
    if samples is None:
        return None
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 100_000:
        raise PrivnluError(f"--samples {samples}: give a whole number from 1 to 100000 (or leave it out for "
                           "deterministic predictions)")
    return samples


def check_device(device: str) -> None:
    """Refuse, in one line, a device this machine does not have (before anything is loaded)."""
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise PrivnluError(f"--device {device}: no CUDA device is available on this machine; use --device cpu")


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """No model-hub access within the block, whatever a folder's config names: ``HF_HUB_OFFLINE=1`` (the
    environment and huggingface_hub's flag, which it reads once at import), restored afterwards."""
    import huggingface_hub.constants as hub

    env, flag = os.environ.get("HF_HUB_OFFLINE"), hub.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"], hub.HF_HUB_OFFLINE = "1", True
    try:
        yield
    finally:
        hub.HF_HUB_OFFLINE = flag
        if env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = env


def _load_key(privacy: dict, dim: int, key: str | Path | None, run_dir: Path | None) -> tuple[MaskPool, str] | None:
    """The owner's mask pool where queries need it (checked against the run), else None."""
    if not privacy.get("key_required"):
        return None
    if key is None:
        if run_dir is None or not (run_dir / KEY_FILE).is_file():
            raise PrivnluError(f"this {privacy['variant']} model encodes queries with the data owner's secret mask "
                               f"pool, which is not in the model folder: pass the run's key file with --key")
        key, source = run_dir / KEY_FILE, "the run folder's key.pt"
    else:
        source = f"--key {key}"
        if not Path(key).is_file():
            raise PrivnluError(f"--key {key}: no such file")
    pool = MaskPool.load(key)
    if pool.m != parse_m(privacy["m"]) or pool.dim != dim or key_check(pool.masks) != privacy["key_check"]:
        raise PrivnluError(f"key file {key} is not this run's key (a different mask pool); pass the key the run wrote")
    return pool, source


def _load_encoder(pipeline: dict, model_dir: Path, run_dir: Path | None, model: str | Path | None,
                  device: str) -> SentenceEncoder:
    """The fine-tuned encoder saved in the folder, or a frozen run's base encoder; its fingerprint is checked."""
    enc = pipeline["encoder"]
    if enc.get("saved"):
        if model is not None:
            raise PrivnluError("--model is for frozen runs; this run's fine-tuned encoder is in its model folder")
        return _saved_encoder(enc, model_dir, device)
    return _base_encoder(enc, model_dir, run_dir, model, device)


def _saved_encoder(enc: dict, model_dir: Path, device: str) -> SentenceEncoder:
    """The fine-tuned encoder saved in the model folder, checked by fingerprint."""
    folder = encoder_dir(model_dir)
    encoder = load_encoder(folder, pooling=enc["pooling"], device=device)
    if encoder.fingerprint != enc["fingerprint"]:
        raise PrivnluError(f"{model_dir}: the encoder's files changed since training (fingerprint differs)")
    check_finite_weights(encoder.model, folder)
    return encoder


def _base_encoder(enc: dict, model_dir: Path, run_dir: Path | None, model: str | Path | None,
                  device: str) -> SentenceEncoder:
    """The unchanged base encoder a model names (where its run found it, ``--model``, the hub id or the packaged
    default), checked by fingerprint."""
    pooling = enc["pooling"]
    want = enc.get("base_fingerprint") or enc["fingerprint"]
    if model is None:
        spec_model = _run_spec_model(run_dir, model_dir)
        if spec_model is not False and not (enc["source"] == "local" and not Path(str(spec_model)).is_dir()):
            model = spec_model
        elif enc["source"] == "hub":
            model = enc["name"]
        elif enc["source"] == "packaged":  # the default MiniLM (None), or a split-zip package by its name
            model = name_for_hub_id(enc["name"])
        elif enc["source"] == "local":
            raise PrivnluError(f"this head was trained on a local encoder folder named '{enc['name']}' "
                               f"(fingerprint {want[:16]}); pass it with --model FOLDER")
    encoder = load_encoder(model, pooling=pooling, device=device)
    if encoder.fingerprint != want:
        raise PrivnluError(f"--model {model or 'default'}: not the encoder this head was trained on (fingerprint "
                           f"{encoder.fingerprint[:16]}, expected {want[:16]}); pass the right one with "
                           "--model FOLDER")
    check_finite_weights(encoder.model, f"--model {model or 'default'}")
    return encoder


def _run_spec_model(run_dir: Path | None, model_dir: Path | None = None):
    """The base encoder the run was given (None = the packaged default; a reference when it was recorded without
    a path), or False if its record is not there:
    ``spec.model`` of a train run's result.json, ``config.model`` of a federated run's, ``settings.model`` of the
    ``dchi finetune`` result JSON beside the model folder."""
    try:
        if run_dir is not None:
            rec = read_json(run_dir / "result.json")  # a path relative to the run folder: privnlu.schemas.paths
            return recorded_path(rec["spec"]["model"] if "spec" in rec else (rec["config"]["model"] or None), run_dir)
        if model_dir is not None:
            return recorded_path(read_json(model_dir.parent / f"{model_dir.name}.json")["settings"]["model"],
                                 model_dir.parent)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return False


@dataclass
class DchiPredictor(Predictor):
    """A ``privnlu dchi finetune`` model. ``head`` is the whole provider model (the fine-tuned classifier, or the
    MLP on ``h(x) + N`` in sequence mode), ``encoder`` the user-side encoder where the mode needs one. Each query is
    privatized on the user side as the run's dev set was (:func:`~privnlu.training.private_finetune.
    privatize_split` at the run's eta; clean token ids in null mode), then scored by the same code as the run's
    evaluation (:func:`~privnlu.training.private_finetune.logits_in_order`); a prediction averages
    :data:`ENCODER_DRAWS` privatizations seeded from the query (or ``samples`` fresh ones)."""

    tokenizer: object = field(default=None, repr=False)
    space: TokenSpace | None = field(default=None, repr=False)

    @property
    def stochastic(self) -> bool:
        return finetune_mode(self.pipeline["dchi"]["mode"]).private

    def averaging(self) -> str:
        if self.samples is not None:
            return super().averaging()
        return f"prediction averaged over {ENCODER_DRAWS} privatizations seeded from the query (deterministic)"

    def describe(self) -> str:
        d, enc = self.pipeline["dchi"], self.pipeline["encoder"]
        model = f"{self.pipeline['label']} (dchi finetune, {d['mode']} mode, {d['encoder']}, base {enc['name']})"
        if not finetune_mode(d["mode"]).private:
            return f"{model}; queries as clean token ids (no privacy, as the run evaluated)"
        return (f"{model}; each query privatized with {d['mechanism']} at eta = {d['eta']:g}, as the run's dev set "
                f"was; {self.averaging()}")

    def _split(self, texts: list[str], pairs: list[str] | None):
        from . import dchi_inputs as pf

        d, enc = self.pipeline["dchi"], self.pipeline["encoder"]
        return pf.tokenize_texts(self.tokenizer, texts, pairs, torch.zeros(len(texts)),
                                 max_length=int(enc["max_length"]),
                                 features_encoder=self.encoder if finetune_mode(d["mode"]).on_representation else None)

    def _score(self, payload: list[torch.Tensor], types: list[torch.Tensor], batch_size: int) -> torch.Tensor:
        from . import dchi_inputs as pf

        return pf.logits_in_order(self.head, payload, types, self.pipeline["dchi"]["mode"],
                                  self.tokenizer.pad_token_id or 0, batch_size=batch_size,
                                  bf16=bool(self.pipeline["encoder"]["bf16"]))

    @torch.no_grad()
    def logits(self, texts: Sequence[str], pairs: Sequence[str] | None = None, *, batch_size: int = 128,
               progress: bool = False) -> torch.Tensor:
        from . import dchi_inputs as pf

        texts, pairs = self.check_inputs(texts, pairs)
        if not texts:
            return torch.empty(0, max(1, len(self.labels)))
        d = self.pipeline["dchi"]
        split = self._split(texts, pairs)
        payload = pf.privatize_split(split, d["mode"], self.space, d["eta"], self.rng, self.tokenizer.pad_token_id or 0)
        return self._score(payload, split.types, batch_size)

    @torch.no_grad()
    def probabilities(self, texts: Sequence[str], pairs: Sequence[str] | None = None, *, batch_size: int = 128,
                      progress: bool = False, samples: int | None = None) -> torch.Tensor:
        from . import dchi_inputs as pf

        texts, pairs = self.check_inputs(texts, pairs)
        samples = check_samples(self.samples if samples is None else samples)
        if not texts:
            return torch.empty(0, max(1, len(self.labels)))
        if not self.stochastic:
            return self._activate(self.logits(texts, pairs, batch_size=batch_size))
        d = self.pipeline["dchi"]
        split, n = self._split(texts, pairs), samples or ENCODER_DRAWS
        payload: list[torch.Tensor] = []
        types: list[torch.Tensor] = []
        for i, text in enumerate(texts):  # each query's draws from its own generator
            one = pf.Split([split.ids[i]] * n, [split.types[i]] * n, torch.zeros(n),
                           None if split.features is None else split.features[i: i + 1].repeat(n, 1))
            rng = ((self.rng or SecretGenerator()) if samples is not None
                   else self.query_rng(text, pairs[i] if pairs is not None else None))
            payload += pf.privatize_split(one, d["mode"], self.space, d["eta"], rng, self.tokenizer.pad_token_id or 0)
            types += one.types
        out = self._activate(self._score(payload, types, batch_size))
        return out.view(len(texts), n, -1).mean(1)


def _load_dchi(pipeline: dict, model_dir: Path, run_dir: Path | None, model: str | Path | None, device: str,
               rng: SecretGenerator, samples: int | None = None) -> DchiPredictor:
    """A ``dchi finetune`` model folder (see :func:`privnlu.model_folder.export.export_dchi_model`)."""
    from ..mechanisms.dchi import TokenSpace
    from ..models.saving import BILSTM_DIR, load_bilstm
    from ..models.heads import Classifier

    enc, d = pipeline["encoder"], pipeline["dchi"]
    head = load_head(model_dir / HEAD_DIR, device=device)
    base = None
    if enc["body"] == "base" or d["user_side"] == "base":
        base = _base_encoder(enc, model_dir, run_dir, model, device)
    elif model is not None:
        raise PrivnluError(f"--model: this {d['mode']}-mode model needs no base encoder (its model folder holds it)")
    if enc["body"] == "base":  # sequence mode: the MLP on h(x) + N, h the unchanged user-side encoder
        net, tokenizer, body = head, base.tokenizer, None
    else:
        if enc["body"] == "transformer":
            saved = _saved_encoder(enc, model_dir, device)
            body, tokenizer = saved.model, saved.tokenizer
            dim = saved.dim
        else:
            from transformers import AutoTokenizer

            body = load_bilstm(model_dir / BILSTM_DIR, device=device)
            tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir(model_dir)), local_files_only=True,
                                                      trust_remote_code=False)
            dim = body.dim
        linear = head.inner.net[-1] if hasattr(head, "inner") else head.net[-1]
        net = Classifier(body, dim, linear.out_features, pooling=enc["pooling"], dropout=0.0)
        net.out.load_state_dict(linear.state_dict())
        net = net.to(device).eval()
    space = None
    if d["user_side"] == "base":
        space = TokenSpace.from_model(base.model, base.tokenizer)
    elif d["user_side"] == "saved":
        space = TokenSpace.from_model(body, tokenizer)
    return DchiPredictor(pipeline, base, net, None, device, None, rng=rng, samples=samples, tokenizer=tokenizer,
                         space=space)


# -- files of texts and of predictions ----------------------------------------------------------------------------

OUTPUT_SUFFIXES = (".csv", ".tsv", ".jsonl")


def read_inputs(text: list[str] | None, text_pair: list[str] | None, input: str | None, *, text_col: str = "text",
                text_pair_col: str | None = None) -> tuple[list[str], list[str] | None]:
    """The texts (and pair texts) given one by one (``text``, ``text_pair``) or in a file (``input``: .txt, one per
    line, or .csv/.tsv/.jsonl with ``text_col`` and ``text_pair_col``), all in memory; ``privnlu predict`` streams
    them instead (:func:`privnlu.model_folder.predict_inputs.open_inputs`)."""
    inputs = open_inputs(text, text_pair, input, text_col=text_col, text_pair_col=text_pair_col)
    texts: list[str] = []
    pairs: list[str] | None = [] if inputs.has_pairs else None
    for t, p in inputs.chunks():
        texts += t
        if pairs is not None and p is not None:
            pairs += p
    return texts, pairs


def format_rows(rows: list[dict], suffix: str) -> str:
    """CSV/TSV with a header, or JSON lines."""
    if suffix == ".jsonl":  # strict JSON: a NaN or infinity is refused, never written
        try:
            return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)
        except ValueError:
            raise PrivnluError("a prediction is NaN or infinite; nothing written") from None
    fields = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, delimiter="\t" if suffix == ".tsv" else ",", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def check_output_file(out: str | Path | None, *, force: bool) -> Path | None:
    """The predictions file (.csv, .tsv or .jsonl), refused if it exists without ``force``; None: stdout."""
    if out is None:
        return None
    out = Path(out)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise PrivnluError(f"--out {out}: use a .csv, .tsv or .jsonl file")
    if out.exists() and not force:
        raise PrivnluError(f"--out {out} exists: choose another file, or add --force to replace it")
    return out


__all__ = ["DchiPredictor", "Predictor", "find_model_dir", "format_rows", "load", "read_inputs"]
