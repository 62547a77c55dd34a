import sys, time, torch, math
from sklearn.metrics import roc_auc_score
from privnlu.data import get_task
from privnlu.models import FeatureCache, load_encoder
from privnlu.attacks import reconstruction as R
from privnlu.attacks.audit import one_hot, score_reconstruction
from privnlu.mechanisms.texthide import TextHide
from privnlu.mechanisms.release import hide_dataset
from privnlu.rng import SecretGenerator
torch.set_num_threads(1)
task = sys.argv[1] if len(sys.argv) > 1 else "cola"; k = int(sys.argv[2]) if len(sys.argv) > 2 else 4
n, E = 100, 50
ds = get_task(task).load("train"); x = FeatureCache().get(load_encoder(), ds, progress=False).features
lab = torch.tensor(ds.labels)
g = torch.Generator().manual_seed(0); order = torch.randperm(len(x), generator=g)
priv, aux = order[:n], order[n:n+2000]
hider = TextHide(1, k, dim=384, rng=SecretGenerator(1, warn=False))
pay, key = hide_dataset(hider, x[priv], one_hot(lab[priv]), epochs=E, batch_size=n)
member = R.membership(key.partners, n, key.public)
share = (member @ member.T) > 0; share.fill_diagonal_(False)
print("share frac", share.float().mean().item())
cfg = R.ReconstructionConfig()
t0=time.time()
gen = torch.Generator().manual_seed(0); torch.manual_seed(0)
a,b,y = R.simulate_pairs(x[aux].float(), n, 1, k, cfg, SecretGenerator(0, warn=False), gen)
net, acc = R.train_scorer(a,b,y,cfg,gen); print("train acc", acc, "t", time.time()-t0)
S = net.score_all(R.features(pay.x), 32)
iu = torch.triu_indices(len(S), len(S), 1)
sub = torch.randperm(iu.shape[1], generator=g)[:300000]
s = S[iu[0][sub], iu[1][sub]]; t = share[iu[0][sub], iu[1][sub]]
print("AUC real", roc_auc_score(t.numpy(), s.numpy()), "acc@0", ((s>0)==t).float().mean().item(), "TPR", (s[t]>0).float().mean().item(), "FPR", (s[~t]>0).float().mean().item())
# raw cosine baseline
f = R.features(pay.x); fn = torch.nn.functional.normalize(f, dim=1); C = fn @ fn.T
print("AUC raw cos", roc_auc_score(t.numpy(), C[iu[0][sub], iu[1][sub]].numpy()))
yv = pay.y.float()
def evalc(name, cl):
    t0=time.time()
    slots, mask, lam0, cls = R.label_coefficients(cl, yv, len(pay.x))
    rec = R.solve_originals(pay.x, slots, mask, lam0, cls, len(cl), steps=cfg.ls_steps, lr=cfg.ls_lr)
    print(name, score_reconstruction(rec, cl, member, x[priv]), "ls t", round(time.time()-t0,1))
for meth in ["greedy","clique"]:
    cl = R.greedy_clusters(S, n, k) if meth=="greedy" else R.clique_clusters(S, n, k, size=int(round(k*E*1.25)))
    evalc(meth, cl)
oracle = [member[:, i].nonzero()[:, 0] for i in range(n)]
evalc("oracle", oracle)
torch.save({"S": S, "member": member, "y": yv, "x": pay.x, "priv": x[priv], "coeffs": key.coeffs, "partners": key.partners}, f"/tmp/privnlu_diag_{task}_{k}.pt")
