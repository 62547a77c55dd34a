import torch, time, math, sys
from privnlu.attacks import reconstruction as R
torch.set_num_threads(1)
d = torch.load(sys.argv[1]); S, member, y, enc, priv = d["S"], d["member"], d["y"], d["x"], d["priv"]
n = member.shape[1]; N = len(enc); k = d["partners"].shape[1]; E = N // n
def pur(cl): return round(float(torch.stack([member[c].sum(0).max() / len(c) for c in cl]).mean()), 3), len(set(int(member[c].sum(0).argmax()) for c in cl))
f = R.features(enc); fn = torch.nn.functional.normalize(f, dim=1); C = fn @ fn.T; C.fill_diagonal_(0)
Sp = torch.sigmoid(S)
for name, A0 in [("cos", C.clamp_min(0)), ("net", Sp), ("cos2", (C - C.mean()).clamp_min(0)), ("netc", (Sp - Sp.mean()).clamp_min(0))]:
  for init in ["rand", "clique"]:
    t0 = time.time()
    g = torch.Generator().manual_seed(0)
    if init == "rand":
        H = torch.rand(N, n, generator=g) * A0.mean().sqrt()
    else:
        H = torch.full((N, n), 0.01)
        for j, c in enumerate(R.clique_clusters(S, n, k, size=int(round(k * E * 1.25)))): H[c, j] = 1.0
        H *= (A0.mean() * N / (H.sum() / n * k)).sqrt() if False else 0.1
    for it in range(150):
        AH = A0 @ H; HHH = H @ (H.T @ H)
        H = H * (0.5 + 0.5 * AH / HHH.clamp_min(1e-12))
    colt = H.topk(k * E, dim=0).indices
    cl = [colt[:, j] for j in range(n)]
    rowt = H.topk(k, dim=1).indices
    prec = member.gather(1, rowt)
    print(name, init, "col", pur(cl), "row-topk prec", round(prec.mean().item(), 3), round(time.time() - t0, 1))
