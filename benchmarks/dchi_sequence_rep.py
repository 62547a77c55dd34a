"""Qu et al. 2021, section 6.2: "even the smallest perturbation we used (eta = 175) causes 30% absolute performance
decrease compared with Null Privacy" (sequence-representation privatization). Re-examined on MiniLM.

Trains the sequence-mode head (frozen encoder, M_seq on the [CLS] vector, provider trains the head) on the first
``--train-limit`` SST-2 sentences at each eta, and the same frozen head on clean vectors, for each seed; writes a
``kind = dchi, analysis = sequence_rep`` record for ``privnlu report``. The [CLS] vectors come from the feature
cache (``privnlu train`` fills it) when present.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/dchi_sequence_rep.py --train-limit 10000 \
        --etas 50,87.8,175 --seeds 0,1,2 --out runs/dchi/sequence_rep.json
"""

from __future__ import annotations

import argparse
import time

from privnlu.experiments import qu2021
from privnlu.io import write_json_atomic
from privnlu.training import private_finetune as pf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="sst2")
    ap.add_argument("--train-limit", type=int, default=10_000)
    ap.add_argument("--etas", default="50,87.8,175")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t0 = time.time()
    prep = qu2021.with_cached_features(pf.prepare(args.task, train_limit=args.train_limit, max_length=128))
    rec = qu2021.sequence_rep(prep, tuple(float(e) for e in args.etas.split(",")),
                              tuple(int(s) for s in args.seeds.split(",")), epochs=args.epochs, log=print)
    rec["seconds"] = round(time.time() - t0, 1)
    write_json_atomic(args.out, rec)
    print(f"wrote {args.out} ({rec['seconds']} s)")


if __name__ == "__main__":
    main()
