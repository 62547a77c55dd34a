"""Issue 11, CoLA k = 6: how crowded are the private originals? For the 100 private examples of the Table 1 runs
(seed 0) and 5,000 distractors, the cosine between absolute values of each original and its nearest other
original / distractor (the margin a recovered vector must beat).

    PRIVNLU_DATA=... PYTHONPATH=src python benchmarks/reconstruction_diagnosis/7_original_crowding.py
"""

import json

import torch

from privnlu.training.engine import RunSpec, prepare
from privnlu.attacks.reconstruction_sweep import select_examples

out = {}
for task, limit in (("cola", None), ("sst2", 20000)):
    prep = prepare(RunSpec(task=task, train_limit=limit), progress=False)
    priv, _, dis = select_examples(prep, 100, 2000, 0, 5000)
    xa = torch.nn.functional.normalize(prep.train_x[priv].abs().float(), dim=1)
    da = torch.nn.functional.normalize(prep.train_x[dis].abs().float(), dim=1)
    c = xa @ xa.T
    c.fill_diagonal_(-1)
    nn_priv = c.max(1).values
    nn_dis = (xa @ da.T).max(1).values
    out[task] = {"nearest_other_original_mean": round(float(nn_priv.mean()), 4),
                 "nearest_distractor_mean": round(float(nn_dis.mean()), 4),
                 "mean_pairwise_original": round(float(c[c > -1].mean()), 4)}
print(json.dumps(out, indent=1))
