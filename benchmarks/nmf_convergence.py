"""How the sparse-nmf groups settle with the iterations (issue 11: where the n = 1,000 time goes).

    PYTHONPATH=src python benchmarks/nmf_convergence.py --inputs runs/i11s7/nmf_in_n1000.pkl [--threads 2] \
        [--iters 150] [--every 10] [--out FILE] -- [bench_reconstruction.py arguments]

Step 1 (once; the arguments after ``--``): runs ``bench_reconstruction.py`` up to the sparse nmf and saves its
inputs (affinity, seed groups, group size) to ``--inputs`` (a local pickle of the attacker's own intermediate
state, never shared). Step 2: runs the nmf updates on them, and every ``--every`` iterations records the groups
(the ``size`` encodings with the largest ``H[:, j]``); prints, per checkpoint, how many groups equal the final ones
and how many members differ from them, and the seconds per iteration.
"""

from __future__ import annotations

import argparse
import json
import pickle
import runpy
import sys
import time
from pathlib import Path

import numpy as np
import torch

from privnlu.attacks import reconstruction_sparse as rs


def dump_inputs(path: Path, bench_args: list[str]) -> None:
    def save(affinity, seeds, size, **kw):
        with open(path, "wb") as fh:
            pickle.dump((affinity, seeds, size), fh)
        raise SystemExit(0)

    rs.nmf_sparse = save
    sys.argv = ["bench_reconstruction.py", *bench_args]
    try:
        runpy.run_path(str(Path(__file__).with_name("bench_reconstruction.py")), run_name="__main__")
    except SystemExit:
        pass


def groups(H, size: int) -> list[frozenset]:
    Hc = H.tocsc()
    return [frozenset(Hc.indices[a:b][np.argsort(-Hc.data[a:b], kind="stable")[:size]].tolist())
            for a, b in zip(Hc.indptr[:-1], Hc.indptr[1:])]


def main() -> None:
    argv = sys.argv[1:]
    bench_args = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--support", type=int, default=64)
    ap.add_argument("--out")
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if not args.inputs.exists():
        dump_inputs(args.inputs, bench_args)
    with open(args.inputs, "rb") as fh:
        A, seeds, size = pickle.load(fh)[:3]
    torch.set_num_threads(args.threads)
    H = rs.nmf_sparse_start(A, seeds, args.support, dtype=np.float64)
    snaps, t0 = {}, time.perf_counter()
    for it in range(1, args.iters + 1):
        rs.nmf_sparse_factor(A, H, iters=1)
        if it % args.every == 0:
            snaps[it] = groups(H, size)
    seconds = time.perf_counter() - t0
    final = snaps[max(snaps)]
    out = {"n_encodings": A.shape[0], "groups": len(seeds), "size": size, "threads": args.threads,
           "seconds_per_iteration": round(seconds / args.iters, 2),
           "checkpoints": {it: {"groups_equal_final": sum(a == b for a, b in zip(g, final)),
                                "members_differing_from_final": int(sum(len(a - b) for a, b in zip(g, final)))}
                           for it, g in snaps.items()}}
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
