"""Fill the feature cache for the issue-10 frozen runs (tasks at --train-limit, their dev sets, public corpora).

Usage: python scripts/warm_features.py 20000 sst2,cola,mrpc,stsb,rte [public,...]
"""

from __future__ import annotations

import sys

from privnlu.training.engine import RunSpec, prepare, with_scheme

limit = int(sys.argv[1])
tasks = sys.argv[2].split(",")
publics = sys.argv[3].split(",") if len(sys.argv) > 3 else []
for task in tasks:
    spec = RunSpec(task=task, train_limit=limit)
    for pub in publics or [None]:
        s = with_scheme(spec, m=256, k=4, inter=True) if pub else spec
        if pub:
            from dataclasses import replace
            s = replace(s, public=pub, public_size=max(limit, 20000) + 1)
        prepare(s, progress=False)
        print("cached", task, pub, flush=True)
