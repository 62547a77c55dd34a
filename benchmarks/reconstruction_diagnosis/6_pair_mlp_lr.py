"""Issue 11: is the paper's vanilla MLP weak because of Adam's lr 0.01? Pair accuracy on a fresh simulated release.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/reconstruction_diagnosis/6_pair_mlp_lr.py cola 4

Simulates 3 training releases (40,000 balanced pairs each) and 1 held-out release (20,000 pairs) from 2,000
training examples, as the attack does (attacker seed 0), and trains the MLP (2d-128-32-2, 3 epochs, batch 512)
with Adam at lr 0.01 (the paper's), 0.001 and 0.0001, and privnlu's factorised network (lr 2e-3), k given.
"""

import json
import sys
from dataclasses import replace

import torch

from privnlu.attacks.reconstruction import ReconstructionConfig, simulate_pairs, train_scorer
from privnlu.attacks.reconstruction_paper import MLPConfig, pair_accuracy, train_pair_mlp
from privnlu.training.engine import RunSpec, prepare
from privnlu.rng import SecretGenerator

task, k = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(1)
prep = prepare(RunSpec(task=task, train_limit=20000 if task == "sst2" else None), progress=False)
aux = prep.train_x[torch.randperm(len(prep.train_x), generator=torch.Generator().manual_seed(0))[100:2100]].float()
cfg = ReconstructionConfig(seed=0)
g = torch.Generator().manual_seed(0)
torch.manual_seed(0)
own = SecretGenerator(0, warn=False)
a, b, y = simulate_pairs(aux, 100, 1, k, cfg, own, g)
ha, hb, hy = simulate_pairs(aux, 100, 1, k, replace(cfg, sim_releases=1, pairs_per_release=20000), own, g)
out = {"task": task, "k": k, "train_pairs": len(y)}
for lr in (0.01, 0.001, 0.0001):
    mlp = train_pair_mlp(a, b, y, MLPConfig(lr=lr), torch.Generator().manual_seed(0))
    out[f"mlp_lr{lr}"] = {"train": round(pair_accuracy(mlp.logit, a, b, y), 4), "heldout": round(pair_accuracy(mlp.logit, ha, hb, hy), 4)}
    print(out, flush=True)
net, acc = train_scorer(a, b, y, cfg, torch.Generator().manual_seed(0))
out["factorised"] = {"train": round(acc, 4), "heldout": round(pair_accuracy(net, ha, hb, hy), 4)}
print(json.dumps(out))
