"""TextHide Tables 3/4 (similarity search) and 7/8 (representation reconstruction): metrics and example queries.

    PYTHONPATH=src python benchmarks/texthide_examples.py --task cola --attack search [--train-limit N] [--queries 1000] \
        [--pooling auto|cls|pooler|mean] [--no-sbert] --out runs/i11/search_cola.json

Writes the same results JSON as ``privnlu attack search|invert`` (kind "attack"), whose conditions now carry
``examples`` (the first queries and what was retrieved). ``--train-limit`` takes the first N training examples
(the search corpus, or the inversion's known pairs), for tasks whose full training features are not cached.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True)
    ap.add_argument("--attack", choices=["search", "invert"], required=True)
    ap.add_argument("--train-limit", type=int)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--pooling", default="auto", choices=["auto", "cls", "pooler", "mean"],
                    help="auto: the model's own (mean for the packaged MiniLM, as the committed examples); "
                         "`privnlu attack` defaults to cls, so pass --pooling cls to match its tables")
    ap.add_argument("--no-sbert", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)

    from privnlu import __version__
    from privnlu.attacks.audit import PAPER_CONDITIONS, inversion_audit, search_audit
    from privnlu.attacks.inversion import InversionConfig
    from privnlu.attacks.leakage import sbert_embedder
    from privnlu.attacks.threat import INVERSION_THREAT, SEARCH_THREAT, Corpus
    from privnlu.training.engine import RunSpec, prepare
    from privnlu.io import write_json_atomic
    from privnlu.models.encoder import public_model_name
    from privnlu.rng import SecretGenerator

    t0 = time.time()
    prep = prepare(RunSpec(task=args.task, train_limit=args.train_limit, pooling=args.pooling), progress=False)
    embed = None if args.no_sbert else sbert_embedder()
    rng = SecretGenerator(args.seed, warn=False)
    g = torch.Generator().manual_seed(args.seed)
    if args.attack == "search":
        corpus = Corpus(prep.train.texts_a, prep.train_x, torch.tensor(prep.train.labels))
        idx = torch.randperm(len(corpus), generator=g)[: args.queries].sort().values
        res = search_audit(corpus, idx, PAPER_CONDITIONS, rng, embed=embed, guess_seed=args.seed)
        extra = {"corpus": f"{args.task}/train", "corpus_size": len(corpus)}
        threat = SEARCH_THREAT
    else:
        split = prep.task.eval_splits[0]
        dev = Corpus(prep.evals[split].texts_a, prep.eval_x[split], torch.tensor(prep.evals[split].labels))
        idx = torch.randperm(len(dev), generator=g)[: args.queries].sort().values
        res = inversion_audit(prep.train_x, torch.tensor(prep.train.labels), dev, idx, PAPER_CONDITIONS, rng, embed=embed,
                              config=InversionConfig(seed=args.seed))
        extra = {"corpus": f"{args.task}/{split}", "corpus_size": len(dev), "n_known_pairs": len(prep.train)}
        threat = INVERSION_THREAT
    rec = {"kind": "attack", "attack": args.attack, "privnlu": __version__, "task": prep.task.name,
           "threat_model": threat.to_json(), "encoder": public_model_name(prep.encoder), "pooling": prep.encoder.pooling,
           "n_queries": len(idx), "conditions": res, "experiment_seed": args.seed, "seconds": round(time.time() - t0, 2),
           "train_limit": args.train_limit, **extra}
    write_json_atomic(args.out, rec)
    for name, c in res.items():
        print(name, c["metrics"], *(f"\n   {e['query']!r} -> {e['retrieved']!r}" for e in c.get("examples", [])))


if __name__ == "__main__":
    main()
