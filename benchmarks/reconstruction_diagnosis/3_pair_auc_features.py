import torch, time, math, sys
from sklearn.metrics import roc_auc_score
from privnlu.attacks import reconstruction as R
torch.set_num_threads(1)
d = torch.load(sys.argv[1]); S, member, y, enc, priv = d["S"], d["member"], d["y"], d["x"], d["priv"]
n = member.shape[1]; N = len(enc)
share = (member @ member.T) > 0; share.fill_diagonal_(False)
g = torch.Generator().manual_seed(0)
iu = torch.triu_indices(N, N, 1); sub = torch.randperm(iu.shape[1], generator=g)[:200000]
I, J = iu[0][sub], iu[1][sub]; t = share[I, J].numpy()
def auc_f(F):
    F = torch.nn.functional.normalize(F, dim=1); return round(roc_auc_score(t, (F[I] * F[J]).sum(1).numpy()), 4)
a = enc.abs().float(); a = a / a.norm(dim=1, keepdim=True)
c = a - a.mean(0)
print("centred", auc_f(c))
print("std", auc_f(c / c.std(0)))
U, s, V = torch.linalg.svd(c, full_matrices=False)
for eps in [1e-3, 1e-2, 1e-1]:
    print("whiten", eps, auc_f((c @ V.T) / (s / s[0] + eps)))
print("log", auc_f(torch.log(a + 1e-3) - torch.log(a + 1e-3).mean(0)))
print("sqrt", auc_f(a.sqrt() - a.sqrt().mean(0)))
