"""Recipe code for Qu et al. 2021 (Privacy-Adaptive BERT) beyond its registered tables: sequence-representation
privatization re-examined (section 6.2, "a 30% absolute decrease even at eta = 175")."""

from __future__ import annotations

# -- section 6.2: sequence-representation privatization ("a 30% absolute decrease even at eta = 175") -------------

def with_cached_features(prep, cache_dir: str | None = None, data_dir: str | None = None):
    """``prep`` with the user-side [CLS] representations of both splits taken from the feature cache (the same
    encoder, pooling and max length as ``privnlu train``), instead of encoding them again."""
    from dataclasses import replace

    from ..models import FeatureCache

    cache = FeatureCache(cache_dir)
    out = {}
    for name, split in (("train", prep.train), ("dev", prep.dev)):
        ds = prep.task.load("train" if name == "train" else prep.task.eval_splits[0], data_dir).head(len(split.labels))
        feats = cache.get(prep.encoder, ds, max_length=prep.max_length, progress=False).features
        out[name] = replace(split, features=feats)
    return replace(prep, train=out["train"], dev=out["dev"])


def sequence_rep(prep, etas: tuple[float, ...], seeds: tuple[int, ...], *, epochs: int = 3, log=None) -> dict:
    """Sequence-representation privatization (M_seq on the frozen encoder's [CLS] vector; the provider trains
    the head only) at each eta, and the same frozen head on clean vectors (``eta = None``), per seed.

    Separates the paper's "30-point drop against Null Privacy" into what freezing the encoder costs (clean
    frozen head vs the fine-tuned null model, which the caller supplies) and what the noise costs (privatized
    vs clean frozen head). Also reports E||N|| = n / eta against the mean norm of the representations."""
    from ..rng import SecretGenerator
    from ..training import private_finetune as pf

    rows = []
    for seed in seeds:
        for eta in (None, *etas):
            rng = SecretGenerator(seed, warn=False)
            if eta is None:  # the frozen head on clean vectors: null privacy, encoder frozen (the label 1e9 is unused)
                cfg = pf.FinetuneConfig(mode="sequence", eta=1e9, epochs=epochs, seed=seed)
                payloads = (list(prep.train.features), list(prep.dev.features))
            else:
                cfg = pf.FinetuneConfig(mode="sequence", eta=eta, epochs=epochs, seed=seed)
                payloads = pf.privatize(prep, "sequence", eta, rng)
            rec = pf.finetune(prep, cfg, payloads=payloads, log=log).record
            rows.append({"eta": eta, "seed": seed, "accuracy": rec["metrics"]["accuracy"], "score": rec["score"]})
    norms = prep.dev.features.norm(dim=1)
    return {"kind": "dchi", "analysis": "sequence_rep", "task": prep.task.name, "dim": int(prep.dev.features.shape[1]),
            "train_size": len(prep.train.labels), "dev_size": len(prep.dev.labels), "epochs": epochs,
            "rep_norm_mean": float(norms.mean()), "rep_norm_sd": float(norms.std()),
            "noise_norm": {str(e): prep.dev.features.shape[1] / e for e in etas}, "rows": rows}

