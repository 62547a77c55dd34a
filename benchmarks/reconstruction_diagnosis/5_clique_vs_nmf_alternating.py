import torch, time, sys
from privnlu.attacks import reconstruction as R
from privnlu.attacks.audit import score_reconstruction
torch.set_num_threads(1)
d = torch.load(sys.argv[1]); S, member, y, enc, priv = d["S"], d["member"], d["y"], d["x"], d["priv"]
n = member.shape[1]; N = len(enc); k = d["partners"].shape[1]; E = N // n
feats = R.features(enc)
t0 = time.time(); clique = R.clique_clusters(S, n, k, size=int(round(k * E * 1.25))); print("clique t", round(time.time()-t0,1), flush=True)
t0 = time.time(); nmf = R.nmf_clusters(feats, n, k * E, clique); print("nmf t", round(time.time()-t0,1), flush=True)
for name, cl in [("clique", clique), ("nmf", nmf)]:
    t0 = time.time()
    sl, ma, l0, cls = R.label_coefficients(cl, y, N)
    X = R.solve_alternating(enc, sl, ma, l0, len(cl), iters=60, restarts=4)
    print(name, "alt", score_reconstruction(X, cl, member, priv), round(time.time()-t0,1), flush=True)
