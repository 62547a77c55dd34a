"""The attacks on instance encodings as runs on a task or on a shared file (``privnlu attack search|invert|
reconstruct``): each plays the defender where a ground truth is needed (it encodes the task's examples under the
chosen conditions), gives the attacker only what its threat model grants, scores the attacker's output and returns
a results record (kind ``attack``).

On a user's shared file (``payload``) the attack reads only that file, never a key file, and the record holds the
attacker's answers (per encoding or per recovered original: the nearest candidate sentence and its cosine). With
the owner's ``key``, read only once the attack has answered, the answers are scored (:mod:`.owner_score`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import torch

from ..errors import PrivnluError, require
from ..mechanisms.release import SharedPayload
from ..models.encoder import public_model_name
from ..params import parse_m
from ..rng import SecretGenerator
from ..schemas import path_ref
from ..training.engine import Prepared, RunSpec, prepare
from ..version import __version__
from . import owner_score
from .conditions import Condition, parse_condition
from .owner_score import Scale
from .payload_space import payload_space
from .reconstruction.attack import CLUSTERINGS, SPARSE_CLUSTERINGS, ReconstructionAttack, ReconstructionConfig
from .reconstruction.sweep import reconstruction_record, reconstruction_sweep
from .representation.audit import inversion_audit, search_audit
from .representation.inversion import InversionConfig
from .representation.search import SimilaritySearch
from .threat import INVERSION_THREAT, RECONSTRUCTION_THREAT, SEARCH_THREAT, AttackerView, Corpus

#: how many per-item answers a payload record lists (the summary covers all of them)
MAX_LISTED = 1000
Log = Callable[[str], None]
NOTE_KEYLESS = "no ground truth (no key is read): these are the attacker's answers"
NOTE_KEYED = ("the attacker's answers, scored with the owner's key and originals, read only after the attack had "
              "answered (the attack never saw them)")


@dataclass(frozen=True)
class Target:
    """What is attacked: a task's data through an encoder, and the queries."""

    task: str
    model: str | None = None
    pooling: str = "auto"  # on a payload: the file's own (attacks.payload_space)
    data_dir: str | None = None
    cache_dir: str | None = None
    queries: int = 100
    seed: int | None = None  # EXPERIMENTS ONLY: the defender's secrets
    progress: bool = True
    max_length: int = 128
    bf16: bool | str = "auto"

    def prepare(self, train_limit: int | None = None) -> Prepared:
        self.check_task()
        return prepare(RunSpec(task=self.task, model=self.model, pooling=self.pooling, data_dir=self.data_dir,
                               cache_dir=self.cache_dir, train_limit=train_limit, max_length=self.max_length,
                               bf16=self.bf16), progress=self.progress)

    def check_task(self) -> None:
        """A classification task (checked before any encoding)."""
        from ..data import get_task

        task = get_task(self.task)
        require(not task.is_regression, f"attack audits need a classification task; {task.name} is a regression task")

    def rng(self) -> SecretGenerator:
        return SecretGenerator(self.seed, warn=False)


def conditions(text: str) -> tuple[Condition, ...]:
    """``"baseline,mix-only,16:4"`` -> the conditions."""
    conds = tuple(parse_condition(c.strip()) for c in text.split(",") if c.strip())
    require(bool(conds), "--conditions is empty")
    return conds


def query_index(n: int, queries: int, seed: int | None) -> torch.Tensor:
    """Which examples are attacked (public, not a secret): a seeded sample of ``queries`` of ``n``."""
    require(queries <= n, f"--queries {queries} is more than the {n} examples available")
    g = torch.Generator().manual_seed(seed if seed is not None else 0)
    return torch.randperm(n, generator=g)[:queries].sort().values


def _record(t: Target, attack: str, threat, prep: Prepared, results: dict, t0: float, **extra) -> dict:
    return {"kind": "attack", "attack": attack, "privnlu": __version__, "task": prep.task.name,
            "threat_model": threat.to_json(), "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling,
            "n_queries": t.queries, "conditions": results, "experiment_seed": t.seed,
            "seconds": round(time.time() - t0, 2), **extra}


def search(t: Target, conds: tuple[Condition, ...], *, embed=None, batch_size: int = 64) -> dict:
    """Similarity search with privatized representations among the task's training sentences (TextHide 4.4)."""
    t0 = time.time()
    prep = t.prepare()
    assert prep.train_x is not None
    corpus = Corpus(prep.train.texts_a, prep.train_x, torch.tensor(prep.train.labels))
    idx = query_index(len(corpus), t.queries, t.seed)
    results = search_audit(corpus, idx, conds, t.rng(), embed=embed, batch_size=batch_size, guess_seed=t.seed or 0)
    return _record(t, "search", SEARCH_THREAT, prep, results, t0, corpus=f"{prep.task.name}/train",
                   corpus_size=len(corpus))


def invert(t: Target, conds: tuple[Condition, ...], config: InversionConfig, *, train_limit: int | None = None,
           embed=None, batch_size: int = 64) -> dict:
    """Learn encoding -> original from known pairs, then search the dev split (TextHide appendix C.3)."""
    t0 = time.time()
    prep = t.prepare(train_limit)
    split = prep.task.eval_splits[0]
    assert prep.train_x is not None
    dev = Corpus(prep.evals[split].texts_a, prep.eval_x[split], torch.tensor(prep.evals[split].labels))
    idx = query_index(len(dev), t.queries, t.seed)
    results = inversion_audit(prep.train_x, torch.tensor(prep.train.labels), dev, idx, conds, t.rng(), embed=embed,
                              config=config, batch_size=batch_size, guess_seed=t.seed or 0)
    return _record(t, "invert", INVERSION_THREAT, prep, results, t0, corpus=f"{prep.task.name}/{split}",
                   corpus_size=len(dev), n_known_pairs=len(prep.train),
                   mlp={"hidden": list(config.hidden), "epochs": config.epochs})


def reconstruction_config(methods: str, *, epochs: int, graph: int = 0, sim_releases: int = 3, pairs: int = 40000,
                          solver: str = "alternating", seed: int | None = None, nmf_repair_rounds: int = 1,
                          nmf_repair_iters: int = 50) -> tuple[tuple[str, ...], ReconstructionConfig]:
    """(clustering methods, the attacker's config); with a k-NN ``graph`` the default method list is the sparse
    methods'."""
    text = ",".join(SPARSE_CLUSTERINGS) if graph and methods == ",".join(CLUSTERINGS) else methods
    chosen = tuple(m.strip() for m in text.split(",") if m.strip())
    require(bool(chosen), "--methods is empty")
    for m in chosen:
        require(m in CLUSTERINGS, f"unknown clustering '{m}'; choose from {', '.join(CLUSTERINGS)}")
        require(not graph or m in SPARSE_CLUSTERINGS, f"--graph runs only {', '.join(SPARSE_CLUSTERINGS)}, not '{m}'")
    return chosen, ReconstructionConfig(sim_releases=sim_releases, sim_epochs=max(2, min(epochs, 20)),
                                        pairs_per_release=pairs, solver=solver, seed=seed if seed is not None else 0,
                                        graph=graph, nmf_repair_rounds=nmf_repair_rounds,
                                        nmf_repair_iters=nmf_repair_iters)


def reconstruct(t: Target, conds: tuple[Condition, ...], methods: tuple[str, ...], config: ReconstructionConfig, *,
                epochs: int = 50, aux_size: int = 2000, distractors: int = 5000, dp=None, noise: str = "per-encoding",
                log: Log = lambda s: None) -> dict:
    """Xie & Hong 2021 on one release per condition (DP instance encoding with ``dp``, a DPSettings, its noise drawn
    per encoding or, ``noise="per-batch"``, once per batch)."""
    require(not any(c.random for c in conds), "reconstruct takes M:K conditions (or baseline, mix-only, texthide), "
                                              "not random")
    require(epochs >= 2, "too few encodings to cluster: use --encodings-per-example 2 or more")
    t0 = time.time()
    prep = t.prepare()
    results = reconstruction_sweep(prep, conds, queries=t.queries, epochs=epochs, aux_size=aux_size, methods=methods,
                                   config=config, dp=dp, noise=noise, seed=t.seed, distractors=distractors,
                                   log=log)
    return reconstruction_record(prep, results, queries=t.queries, epochs=epochs, aux_size=aux_size, config=config,
                                 seed=t.seed, t0=t0)


# -- a user's own shared file ------------------------------------------------------------------------------------

def load_shared(path: str | Path) -> SharedPayload:
    """Load and check a shared encoding file (safetensors). A pickle (a key file, or an old ``.pt`` payload) is
    refused with one line and never unpickled."""
    require(Path(path).is_file(), f"--payload {path}: no such file")
    try:  # the metadata and both tensors are validated as the file is read (privnlu.schemas.payload)
        return SharedPayload.load(path)
    except PrivnluError as exc:
        raise PrivnluError(f"--payload {exc}") from None


def _payload_prep(t: Target, payload: SharedPayload, *, own_files: bool, corpus_limit: int | None,
                  log: Log, path: str | Path = "") -> tuple[Target, Prepared]:
    """The attacker's candidates and auxiliary data: the task the file names (or ``t.task``)."""
    task = t.task or payload.meta.get("task")
    require(task is not None, "--payload: the file names no task; pass --task (the attacker's candidate and auxiliary "
                              "data)")
    require(payload.meta.get("data") != "own files" or own_files,
            f"--payload: the file encodes the owner's own data (task '{task}'); pass --train-file/--dev-file with the "
            "attacker's candidate and auxiliary sentences")
    t = replace(t, task=task, **payload_space(payload.meta, path=path, model=t.model, pooling=t.pooling,
                                              max_length=t.max_length, bf16=t.bf16))
    log(f"candidates: the {task} training sentences ({'the first ' + str(corpus_limit) if corpus_limit else 'all of them'}); "
        f"their representations are computed once with a progress bar and cached, in the payload's space ({t.pooling} "
        f"pooling, max length {t.max_length})")
    prep = t.prepare(corpus_limit)
    assert prep.train_x is not None
    require(payload.x.shape[1] == prep.train_x.shape[1],
            f"attack data have mismatched dimensions: the payload's encodings are {payload.x.shape[1]}-d, the "
            f"attacker's {prep.task.name} representations {prep.train_x.shape[1]}-d")
    return t, prep


def _payload_record(t: Target, attack: str, threat, prep: Prepared, path, payload: SharedPayload, t0: float, *,
                    keyed: bool = False, **extra) -> dict:
    public = {k: payload.meta.get(k) for k in ("m", "k", "epochs", "n_examples", "inter", "task", "split", "encoder",
                                               "scheme")}
    return {"kind": "attack", "attack": attack, "mode": "payload", "privnlu": __version__, "payload": path_ref(path),
            "payload_meta": public, "task": prep.task.name, "threat_model": threat.to_json(),
            "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling, "n_encodings": len(payload.x),
            "experiment_seed": t.seed, "note": NOTE_KEYED if keyed else NOTE_KEYLESS,
            "seconds": round(time.time() - t0, 2), **extra}


def _owner_truth(t: Target, key: str | Path, payload: SharedPayload, prep: Prepared):
    """The owner's key and originals, read once the attack has answered (:mod:`.owner_score`); the key must
    reproduce the payload from the originals where the attacker's candidates hold them (the training split)."""
    truth = owner_score.load_truth(key, payload)
    meta = payload.meta
    split, n = meta.get("split", "train"), int(meta["n_examples"])
    texts = owner_score.private_texts(t.task, split, n, t.data_dir)
    if split == "train" and prep.train_x is not None and prep.train.texts_a[:n] == texts:
        owner_score.check_reproduces(truth, payload, prep.train_x[:n], key)
    return truth, texts


def search_payload(t: Target, path: str | Path, *, own_files: bool = False, corpus_limit: int | None = None,
                   key: str | Path | None = None, scale: Scale | None = None, log: Log = lambda s: None) -> dict:
    """Nearest candidate sentence (cosine, FAISS) for every encoding in the file; with the owner's ``key`` (read
    after the attack has answered) the answers are scored, ``scale`` putting the share on the advantage over
    chance."""
    t0 = time.time()
    payload = load_shared(path)
    if key is not None:
        owner_score.check_key_path(key, path)
    t, prep = _payload_prep(t, payload, own_files=own_files, corpus_limit=corpus_limit, log=log, path=path)
    corpus = Corpus(prep.train.texts_a, prep.train_x)
    view = AttackerView(SEARCH_THREAT, encodings=payload.x.float(),
                        scheme={k: payload.meta[k] for k in ("m", "k") if k in payload.meta}, candidates=corpus)
    res = SimilaritySearch().run(view)
    answers = [{"encoding": i, "sentence": corpus.texts[int(j)], "cosine": round(float(c), 4)}
               for i, (j, c) in enumerate(zip(res.index[:MAX_LISTED], res.cosine[:MAX_LISTED]))]
    scored = {}
    if key is not None:  # the attack has answered: only now is the key read
        truth, private = _owner_truth(t, key, payload, prep)
        said = [corpus.texts[int(j)] for j in res.index]
        scored["owner_score"] = owner_score.score(said, owner_score.search_truth(truth), private, corpus.texts,
                                                  scale=scale)
        log("search: " + owner_score.summary(scored["owner_score"]))
    return _payload_record(t, "search", SEARCH_THREAT, prep, path, payload, t0, keyed=key is not None,
                           corpus=f"{prep.task.name}/train", corpus_size=len(corpus),
                           mean_cosine=round(float(res.cosine.mean()), 4), answers=answers,
                           answers_listed=len(answers), **scored)


def reconstruct_payload(t: Target, path: str | Path, methods: str, *, aux_size: int = 2000, own_files: bool = False,
                        key: str | Path | None = None, scale: Scale | None = None, log: Log = lambda s: None,
                        **config) -> dict:
    """The Xie & Hong 2021 attack on the file: one recovered vector and nearest sentence per original; with the
    owner's ``key`` (read after the attack has answered) each method's answers are scored."""
    t0 = time.time()
    payload = load_shared(path)
    if key is not None:
        owner_score.check_key_path(key, path)
    meta = payload.meta
    for field in ("m", "k", "epochs"):
        require(field in meta, f"--payload {path}: the file does not state '{field}'")
    epochs, k = int(meta["epochs"]), int(meta["k"])
    parse_m(meta["m"])
    require(not meta.get("inter", False), "--payload: the reconstruction attack models TextHide-intra; this file is "
                                          "TextHide-inter")
    require(epochs >= 2, f"too few encodings to cluster: the file encodes each example {epochs} time(s); the attack "
                         "needs 2 or more (privnlu encode --encodings-per-example 2)")
    chosen, cfg = reconstruction_config(methods, epochs=epochs, seed=t.seed, **config)
    t, prep = _payload_prep(t, payload, own_files=own_files, corpus_limit=None, log=log, path=path)
    g = torch.Generator().manual_seed(t.seed if t.seed is not None else 0)  # which examples; not a secret
    aux_idx = torch.randperm(len(prep.train), generator=g)[:aux_size]
    labels = torch.tensor(prep.train.labels)
    auxiliary = Corpus([prep.train.texts_a[i] for i in aux_idx.tolist()], prep.train_x[aux_idx], labels[aux_idx])
    candidates = Corpus(prep.train.texts_a, prep.train_x)
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=payload.x.float(), mixed_labels=payload.y.float(),
                        scheme={"m": meta["m"], "k": k, "epochs": epochs, "dim": payload.x.shape[1]},
                        auxiliary=auxiliary, candidates=candidates)
    attack = ReconstructionAttack(cfg, chosen)
    out = {}
    results = list(attack.run(view))
    for r in results:
        xa = torch.nn.functional.normalize(r.recovered.abs(), dim=1)
        ca = torch.nn.functional.normalize(candidates.x[torch.as_tensor(r.sentence_index)].abs().float(), dim=1)
        cos = (xa * ca).sum(1)
        out[r.method] = {"groups": len(r.clusters), "seconds": {k2: round(v, 2) for k2, v in r.seconds.items()},
                         "mean_cosine": round(float(cos.mean()), 4),
                         "answers": [{"group": i, "size": len(c), "sentence": candidates.texts[int(j)],
                                      "cosine": round(float(s), 4)}
                                     for i, (c, j, s) in enumerate(zip(r.clusters, r.sentence_index, cos))][:MAX_LISTED]}
    if key is not None:  # every method has answered: only now is the key read
        truth, private = _owner_truth(t, key, payload, prep)
        for r in results:
            said = [candidates.texts[int(j)] for j in r.sentence_index]
            out[r.method]["owner_score"] = owner_score.score(said, owner_score.group_truth(truth, r.clusters),
                                                             private, candidates.texts, scale=scale)
            log(f"{r.method}: " + owner_score.summary(out[r.method]["owner_score"]))
    return _payload_record(t, "reconstruct", RECONSTRUCTION_THREAT, prep, path, payload, t0, keyed=key is not None,
                           corpus=f"{prep.task.name}/train", corpus_size=len(candidates), aux_size=len(auxiliary),
                           pair_train_accuracy=attack.pair_train_accuracy, methods=out, config=dict(cfg.__dict__))


# -- the runners the registry names (:mod:`.registry`): one signature per surface ------------------------------------

#: the clusterings run when none are named
DEFAULT_METHODS = "paper-greedy,threshold,clique,nmf"


def search_task(t: Target, conditions_text: str, *, seed: int | None = None, **knobs) -> dict:
    """:func:`search` under the named conditions."""
    return search(t, conditions(conditions_text), **knobs)


def invert_task(t: Target, conditions_text: str, *, seed: int | None = None, **knobs) -> dict:
    """:func:`invert` under the named conditions, the MLP seeded by ``seed``."""
    return invert(t, conditions(conditions_text), InversionConfig(seed=seed or 0), **knobs)


def reconstruct_task(t: Target, conditions_text: str, *, seed: int | None = None, **knobs) -> dict:
    """:func:`reconstruct` under the named conditions (``epochs``, ``methods`` and the attacker's settings in
    ``knobs``)."""
    epochs = knobs.pop("epochs", 50)
    methods, config = reconstruction_config(knobs.pop("methods", DEFAULT_METHODS), epochs=epochs, seed=seed)
    return reconstruct(t, conditions(conditions_text), methods, config, epochs=epochs, **knobs)


def reconstruct_payload_run(t: Target, path: str | Path, **knobs) -> dict:
    """:func:`reconstruct_payload` with the default clusterings unless ``methods`` is given."""
    return reconstruct_payload(t, path, knobs.pop("methods", DEFAULT_METHODS), **knobs)
