import torch, time, math, sys
from privnlu.attacks import reconstruction as R
from privnlu.attacks.audit import score_reconstruction
torch.set_num_threads(1)
d = torch.load(sys.argv[1]); S, member, y, enc, priv = d["S"], d["member"], d["y"], d["x"], d["priv"]
n = member.shape[1]; N = len(enc)
def alt(enc, slots, mask, lam0, cls, n_groups, y, iters=150, restarts=8, lam_w=10.0, update_lam=True, gen=None):
    a = enc.abs().float(); N, K = slots.shape; d = a.shape[1]
    gen = gen or torch.Generator().manual_seed(0)
    lam = (lam0 * mask).clone()
    def solveX(lam, t):  # t: (R, N, d) signed targets; normal equations with sparse design
        G = torch.zeros(n_groups, n_groups)
        for i in range(K):
            for j in range(K):
                G.index_put_((slots[:, i], slots[:, j]), lam[:, i] * lam[:, j], accumulate=True)
        G += 1e-4 * torch.eye(n_groups)
        rhs = torch.zeros(t.shape[0], n_groups, d)
        for i in range(K):
            rhs.index_add_(1, slots[:, i], t * lam[None, :, i, None])
        return torch.linalg.solve(G, rhs)
    # init X: magnitudes with random signs
    X = solveX(lam, a[None].expand(restarts, -1, -1).clone())
    sg = torch.where(torch.rand(X.shape, generator=gen) < .5, -1., 1.); sg[0] = 1
    X = X.abs() * sg
    for it in range(iters):
        mix = (lam[None, :, :, None] * X[:, slots]).sum(2)   # (R,N,d)
        s = torch.where(mix >= 0, 1., -1.)
        X = solveX(lam, s * a)
    mix = (lam[None, :, :, None] * X[:, slots]).sum(2)
    per = ((mix.abs() - a) ** 2).mean(1)  # (R, d)
    pick = per.argmin(0); X = X[pick, :, torch.arange(d)].T.contiguous()
    if update_lam:
        for outer in range(3):
            mix = (lam[:, :, None] * X[slots]).sum(1); s = torch.where(mix >= 0, 1., -1.)
            t = s * a
            B = X[slots] * mask[:, :, None]  # (N,K,d)
            G = B @ B.transpose(1, 2)
            rhs = (B @ t[:, :, None])[:, :, 0]
            # label rows: for each class c present: sum_{j: cls_j=c} lam_j = y[c]
            C = y.shape[1]
            Acl = torch.stack([((cls == c) & mask).float() for c in range(C)], 1)  # (N,C,K)
            G = G + lam_w * Acl.transpose(1, 2) @ Acl + 1e-6 * torch.eye(K)
            rhs = rhs + lam_w * (Acl.transpose(1, 2) @ y[:, :, None])[:, :, 0]
            lam = torch.linalg.solve(G, rhs).clamp_min(0) * mask
            for it in range(30):
                mix = (lam[:, :, None] * X[slots]).sum(1); s = torch.where(mix >= 0, 1., -1.)
                X = solveX(lam, (s * a)[None])[0]
    return X
def labco(cl):
    return R.label_coefficients(cl, y, N)
oracle = [member[:, i].nonzero()[:, 0] for i in range(n)]
slots, mask, lam0, cls = labco(oracle)
for upd in [False, True]:
    t0 = time.time(); X = alt(enc, slots, mask, lam0, cls, n, y, update_lam=upd)
    print("oracle alt upd", upd, score_reconstruction(X, oracle, member, priv), round(time.time() - t0, 1))
# true lambda
part, co = d["partners"], d["coeffs"]
# slots in oracle: cluster c == original c; build true lam per slot
tl = torch.zeros_like(lam0)
for e in range(N):
    for j in range(slots.shape[1]):
        if mask[e, j]:
            tl[e, j] = co[e][part[e] == slots[e, j]].sum()
t0 = time.time(); X = alt(enc, slots, mask, tl, cls, n, y, update_lam=False)
print("oracle true lam", score_reconstruction(X, oracle, member, priv), round(time.time() - t0, 1))
