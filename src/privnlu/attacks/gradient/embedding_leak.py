"""The embedding-gradient leak: a client's words read off its gradient (Melis et al. 2019; TAG; LAMP).

For a lookup table ``E`` (word or position embeddings) the input of the encoder is
``e_bp = E_word[x_bp] + E_pos[p] + E_type[t_bp]`` and the chain rule gives

    dL/dE_word[v] = sum_{(b,p): x_bp = v} g_bp,        dL/dE_pos[p] = sum_b g_bp,      g_bp = dL/de_bp

so the word table's gradient is non-zero exactly in the rows of the batch's token ids (padding
positions get ``g_bp = 0``: masked keys never reach [CLS]). Reading the non-zero rows gives the
batch's token *set* (:func:`read_token_set`); no optimisation is needed and TextHide, which acts on
the sentence representation after the encoder, changes nothing.

Ordering (:func:`order_tokens`): the position table's rows are the same per-position gradients
``g_bp`` summed over the batch, so the two tables' rows can be matched. With one sentence (b = 1)
``dL/dE_word[v] = sum_{p: x_p = v} dL/dE_pos[p]``: each recovered token is placed at the position(s)
whose rows sum to its row (least squares over the recovered tokens, exact up to float error). With
``b > 1`` each position's row is the sum of ``b`` token rows; a non-negative least-squares fit of
every position row on the recovered tokens' rows gives the tokens at each position (a "slot" set),
which is all this model-free matching can give: which sentence a slot's token belongs to is not
determined by these rows. :func:`link_sentences` then assigns slot tokens to sentences by a greedy
search scored by the gradient distance of the candidate batch (TAG/LAMP-style gradient matching
with the model the server sent); it needs the client's loss, so under TextHide, whose masks and
coefficients are secret, the attacker can only use the unmasked loss as a surrogate.

The attacker receives only a message's arrays (the eavesdropper's view) and the public encoder
(:data:`EMBEDDING_LEAK_THREAT`); the true batch is used only by :func:`score_tokens`, on the
auditor's side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from ..threat import Attack, AttackerView, Grant, Capabilities

EMBEDDING_LEAK_THREAT = Capabilities(
    "wire-eavesdropper",
    frozenset({Grant.ENCODER, Grant.SCHEME}),
    "An honest-but-curious server or an eavesdropper on the federated wire: it sees every message (the global model "
    "the server sends and each client's reply) and knows the public architecture and tokenizer (h); it holds no "
    "key, no client data and no pool mask.",
)

WORD_TABLE = "word_embeddings.weight"
POSITION_TABLE = "position_embeddings.weight"


@dataclass
class TokenLeak:
    """What one message gives away: the token ids (and their strings), and the longest sequence length."""

    token_ids: list[int]
    tokens: list[str] = field(default_factory=list)
    length: int | None = None  # non-zero position rows: the longest sequence in the batch (None: table not sent)
    dense: bool = False  # no exactly-zero row: the ids were read by a norm threshold (noisy message)


def find_table(grads: Mapping[str, np.ndarray | torch.Tensor], suffix: str) -> torch.Tensor | None:
    """The gradient of the table whose wire name ends in ``suffix`` (architecture names are public)."""
    names = [n for n in grads if n.endswith(suffix)]
    if not names:
        return None
    return torch.as_tensor(np.asarray(grads[names[0]])).double()


def support(rows: torch.Tensor, *, false_positives: float = 0.01) -> tuple[list[int], bool]:
    """Rows that carry signal: the non-zero rows; if every row is non-zero (dense noise was added), the rows whose
    squared norm exceeds the noise's chi-square quantile, the noise scale estimated from the median row (most rows
    of a vocabulary-sized table are pure noise), at ``false_positives`` expected false rows."""
    sq = (rows ** 2).sum(1)
    nonzero = sq > 0
    if not bool(nonzero.all()):
        return torch.nonzero(nonzero).flatten().tolist(), False
    from scipy.stats import chi2

    n, d = rows.shape
    sigma2 = float(sq.median()) / chi2.median(d)
    threshold = sigma2 * chi2.isf(false_positives / n, d)
    return torch.nonzero(sq > threshold).flatten().tolist(), True


def read_token_set(grads: Mapping[str, np.ndarray | torch.Tensor], tokenizer=None) -> TokenLeak | None:
    """The token ids of the batch behind one gradient message, or None when no word-table gradient is in it."""
    word = find_table(grads, WORD_TABLE)
    if word is None:
        return None
    ids, dense = support(word)
    pos = find_table(grads, POSITION_TABLE)
    length = None
    if pos is not None:
        rows, _ = support(pos)
        length = max(rows) + 1 if rows else 0
    tokens = list(tokenizer.convert_ids_to_tokens(ids)) if tokenizer is not None else []
    return TokenLeak(ids, tokens, length, dense)


# -- ordering ------------------------------------------------------------------------------------------------


def slot_tokens(word: torch.Tensor, pos: torch.Tensor, ids: list[int], length: int, *,
                tol: float = 0.5) -> list[list[int]]:
    """The tokens at each position 0..length-1: fit every position row ``dL/dE_pos[p]`` as a non-negative
    combination of the recovered tokens' rows ``dL/dE_word[v]``; coefficients near 1 name the tokens there.

    A token used once in the batch has row ``g_bp`` and gets coefficient 1 at its position and 0 elsewhere; a
    repeated token's row is a sum of several ``g_bp``: it gets a fractional coefficient and may be missed.
    """
    from scipy.optimize import nnls

    if not ids or length <= 0:
        return [[] for _ in range(max(length, 0))]
    a = word[ids].T.numpy()  # (d, |S|)
    scale = np.linalg.norm(a, axis=0) + 1e-30
    slots: list[list[int]] = []
    for p in range(length):
        coef, _ = nnls(a / scale, pos[p].numpy(), maxiter=50 * len(ids))
        slots.append([ids[j] for j in np.flatnonzero(coef / scale > tol)])
    return slots


def order_single(word: torch.Tensor, pos: torch.Tensor, ids: list[int], length: int, *,
                 tol: float = 1e-3) -> list[int]:
    """b = 1: the sentence's token ids in order. ``dL/dE_word[v] = sum_{p: x_p = v} dL/dE_pos[p]``: a token used
    once has exactly its position's row, so positions whose row equals a token row (relative distance under
    ``tol``) take that token. The other positions hold the repeated tokens, whose rows are 0/1 sums of those
    positions' rows: least squares of each remaining token row on the remaining position rows, each position going
    to the token with the largest coefficient there; this is determined while the repeated tokens fill at most d
    positions. (Least squares on all positions at once is underdetermined once the sentence is longer than the
    hidden size d, and then misplaces tokens.)"""
    if not ids or length <= 0:
        return []
    p_rows, w_rows = pos[:length].double(), word[ids].double()  # (L, d), (S, d)
    dist = torch.cdist(p_rows, w_rows) / w_rows.norm(dim=1).clamp_min(1e-30)  # (L, S)
    nearest, exact = dist.argmin(1), dist.min(1).values < tol
    out = [ids[int(j)] if e else None for j, e in zip(nearest, exact)]
    rest_pos = [p for p in range(length) if not exact[p]]
    if rest_pos:
        used = set(nearest[exact].tolist())
        rest_tok = [j for j in range(len(ids)) if j not in used] or list(range(len(ids)))
        coef = torch.linalg.lstsq(p_rows[rest_pos].T, w_rows[rest_tok].T).solution  # (|rest_pos|, |rest_tok|)
        for p, j in zip(rest_pos, coef.argmax(1).tolist()):
            out[p] = ids[rest_tok[j]]
    return out


def order_tokens(grads: Mapping[str, np.ndarray | torch.Tensor], leak: TokenLeak, batch_size: int) -> list[list[int]]:
    """Model-free ordering from the two tables' rows: the sentence (b = 1) or the per-position token slots."""
    word, pos = find_table(grads, WORD_TABLE), find_table(grads, POSITION_TABLE)
    if word is None or pos is None or not leak.length:
        return []
    if batch_size == 1:
        return [order_single(word, pos, leak.token_ids, leak.length)]
    return slot_tokens(word, pos, leak.token_ids, leak.length)


class EmbeddingLeakAttack(Attack):
    """Read each message's token set (and, with the position table, its order) off the embedding gradients."""

    name = "embedding-gradient leak"
    requires = frozenset({Grant.ENCODER})

    def run(self, grads: Mapping[str, np.ndarray | torch.Tensor], view: AttackerView,
            batch_size: int | None = None) -> dict:
        """``grads``: one client message's gradient record (what crossed the wire); ``batch_size``: the
        ``num-examples`` the message declares. Returns the recovered token set and, where possible, its order."""
        self.check(view)
        tokenizer = getattr(view.need("encoder"), "tokenizer", None)
        leak = read_token_set(grads, tokenizer)
        if leak is None:
            return {"embedding_gradient": False}
        out: dict = {"embedding_gradient": True, "token_ids": leak.token_ids, "tokens": leak.tokens,
                     "length": leak.length, "dense": leak.dense}
        if batch_size and not leak.dense:
            order = order_tokens(grads, leak, batch_size)
            if batch_size == 1 and order:
                out["sentence_ids"] = order[0]
                if tokenizer is not None:
                    out["sentence"] = tokenizer.decode(order[0], skip_special_tokens=True)
            elif order:
                out["slots"] = order
        return out


# -- the auditor's scoring (ground truth never reaches the attack) ------------------------------------------


def score_tokens(recovered: list[int] | set[int], true_ids: list[int] | set[int]) -> dict:
    """Precision and recall of a recovered token set against the batch's true (non-padding) token ids."""
    rec, true = set(recovered), set(true_ids)
    hit = len(rec & true)
    precision = hit / len(rec) if rec else (1.0 if not true else 0.0)
    recall = hit / len(true) if true else 1.0
    return {"recovered": len(rec), "true": len(true), "precision": precision, "recall": recall}


def score_sentences(recovered: list[list[int]], true: list[list[int]]) -> dict:
    """Exact-sentence rate (a true sentence recovered token for token) and token accuracy (the best-matching
    recovered sentence's tokens at the same positions), averaged over the true sentences."""
    exact, acc = 0, 0.0
    for t in true:
        if any(r == t for r in recovered):
            exact += 1
        best = max((sum(a == b for a, b in zip(r, t)) for r in recovered), default=0)
        acc += best / max(len(t), 1)
    n = max(len(true), 1)
    return {"exact_sentences": exact / n, "token_accuracy": acc / n}


def mean_or_nan(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


# -- a recorded run: every captured client message --------------------------------------------------------


def _truth(truth_cfg, node_id: int, rnd: int) -> tuple[list[str], list[list[int]], str]:
    """AUDITOR: the true batch behind one message (replayed from the seeded run). Node ids map to partitions as
    the in-process backend numbers them (100 + partition); Ray and deployed node ids cannot be mapped."""
    from ...errors import PrivnluError
    from ...federated.client import replay_batch
    from ...federated.inprocess import FIRST_NODE_ID

    part = node_id - FIRST_NODE_ID
    if not 0 <= part < truth_cfg.clients:
        raise PrivnluError(f"--truth: node {node_id} is not an in-process node (100 + partition); scoring needs a "
                           "run with --backend inprocess")
    texts, ids = replay_batch(truth_cfg, part, rnd)
    return texts, ids, "node id"


def entry_truth(truth_cfg, entry: dict) -> tuple[list[str], list[list[int]]]:
    """AUDITOR: the true batch behind one captured entry; for a SecAgg+ aggregate (node 0), the union of the
    batches of the clients it sums (``configs.secagg.nodes``), in that order."""
    nodes = entry.get("configs", {}).get("secagg", {}).get("nodes")
    texts: list[str] = []
    ids: list[list[int]] = []
    for node in ([int(n) for n in nodes] if nodes else [entry["node_id"]]):
        t, i, _ = _truth(truth_cfg, node, entry["round"])
        texts += t
        ids += i
    return texts, ids


def _sent_layer_norm(capture, rnd: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The embedding LayerNorm of the model the server sent in round ``rnd`` (what the eavesdropper saw)."""
    for e in capture.sent:
        if e["round"] == rnd and "arrays" in e:
            arrays = next(iter(e["arrays"].values()))
            keys = [f"encoder.model.embeddings.LayerNorm.{k}" for k in ("weight", "bias")]
            if all(k in arrays for k in keys):
                return tuple(torch.as_tensor(np.asarray(arrays[k])).float() for k in keys)  # type: ignore[return-value]
    return None


SPAN_THRESHOLD = 0.5  # relative residual below which the span test calls a token present (a fixed heuristic)


def audit_capture(capture, encoder, *, truth_cfg=None, rounds: set[int] | None = None, examples: int = 3,
                  span: bool = False) -> list[dict]:
    """Run :class:`EmbeddingLeakAttack` on every client reply in a wire capture (the attacker sees one message's
    arrays and its declared batch size), then, with ``truth_cfg`` (the seeded run's config), score each against
    the replayed true batch. Secure-aggregation replies are attacked one by one and, as the server may, summed
    per round (the union of the participants' tokens is scored against the union of their batches)."""
    from ...federated.secagg import LOSS_SUM, NUM_EXAMPLES, RECORD, decode

    view = AttackerView(EMBEDDING_LEAK_THREAT, encoder=encoder)
    attack = EmbeddingLeakAttack()
    rows: list[dict] = []
    sums: dict[int, list[dict]] = {}
    for e in capture.received:
        if e.get("type") != "train" or "error" in e or (rounds and e["round"] not in rounds):
            continue
        arrays = e.get("arrays", {})
        if "gradients" in arrays:
            b = int(e.get("metrics", {}).get("metrics", {}).get("num-examples", 0)) or None
            out = attack.run(arrays["gradients"], view, batch_size=b)
        elif RECORD in arrays:
            sums.setdefault(e["round"], []).append(e)
            masked = {n: decode(a) for n, a in arrays[RECORD].items() if n not in (NUM_EXAMPLES, LOSS_SUM)}
            out = attack.run(masked, view)
        else:
            continue
        row = {"round": e["round"], "node_id": e["node_id"], **out}
        ln = _sent_layer_norm(capture, e["round"]) if span and "gradients" in arrays else None
        if ln is not None:  # the attack that does not need the embedding tables (the frozen default)
            ranked, res, rank = span_token_test(arrays["gradients"], encoder, ln)
            sel = [i for i, r in zip(ranked, res.tolist()) if r < SPAN_THRESHOLD]
            row["span"] = {"rank": rank, "token_ids": sel, "tokens": list(encoder.tokenizer.convert_ids_to_tokens(sel)),
                           "ranked": ranked[:500]}
        if truth_cfg is not None and (out.get("embedding_gradient") or "span" in row):
            texts, ids = entry_truth(truth_cfg, e)
            true = {i for r in ids for i in r}
            row["true_sentences"] = texts[:examples]
            if out.get("embedding_gradient"):
                row.update(score_tokens(out["token_ids"], true))
            if "sentence_ids" in out:
                row.update(score_sentences([out["sentence_ids"]], ids))
            if "span" in row:
                row["span"].update(score_tokens(row["span"]["token_ids"], true))
                row["span"]["precision_at_true_count"] = len(set(row["span"]["ranked"][:len(true)]) & true) / len(true)
        rows.append(row)
    for rnd, replies in sorted(sums.items()):  # the server's right under SecAgg: the sum of all replies
        total: dict[str, np.ndarray] = {}
        for e in replies:
            for n, a in e["arrays"][RECORD].items():
                a = np.asarray(a, dtype=np.uint64)
                total[n] = a.copy() if n not in total else total[n] + a
        grads = {n: decode(a) for n, a in total.items() if n not in (NUM_EXAMPLES, LOSS_SUM)}
        out = attack.run(grads, view)
        row = {"round": rnd, "node_id": "sum", "participants": len(replies), **out}
        if truth_cfg is not None and out.get("embedding_gradient"):
            union: set[int] = set()
            texts: list[str] = []
            for e in replies:
                t, ids, _ = _truth(truth_cfg, e["node_id"], rnd)
                union |= {i for r in ids for i in r}
                texts += t[:1]
            row.update(score_tokens(out["token_ids"], union))
            row["true_sentences"] = texts[:examples]
        rows.append(row)
    return rows


# -- the default (frozen tables) is not a proof of privacy: the first layer's span -------------------------

FIRST_LAYER = ("layer.0.attention.self.query.weight", "layer.0.attention.self.key.weight",
               "layer.0.attention.self.value.weight")


def span_token_test(grads: Mapping[str, np.ndarray | torch.Tensor], encoder, layer_norm: tuple[torch.Tensor, torch.Tensor],
                    *, max_positions: int = 64, rank_tol: float = 1e-3) -> tuple[list[int], torch.Tensor, int]:
    """DAGER-style check (Petrov et al. 2024), simplified: the first attention layer's weight gradients are
    ``sum_bp delta_bp z_bp^T``, so their row space is spanned by the layer's inputs ``z_bp = LN(E[x_bp] + P[p] + T[0])``.
    With fewer than ``d`` token slots the span is a proper subspace, and a candidate ``(v, p)`` whose ``z`` lies in
    it is (up to the client's dropout) a token of the batch. Needs no embedding gradient: the tables are the public
    pretrained ones, ``layer_norm`` = (weight, bias) of the embedding LayerNorm from the model the server sent.

    Returns the token ids ranked by their smallest relative residual over positions ``< max_positions``, those
    residuals (same order) and the span's rank (``rank >= d`` means the test cannot work)."""
    mats = [find_table(grads, n) for n in FIRST_LAYER]
    if any(m is None for m in mats):
        return [], torch.zeros(0), 0
    g = torch.cat([m.float() for m in mats])  # (3 d_out, d_in)
    _, s, vh = torch.linalg.svd(g, full_matrices=False)
    rank = int((s > rank_tol * s[0]).sum()) if s.numel() and s[0] > 0 else 0
    basis = vh[:rank]  # (r, d)
    emb = encoder.model.embeddings
    with torch.no_grad():
        words = emb.word_embeddings.weight + emb.token_type_embeddings.weight[0]
        best = torch.full((words.shape[0],), float("inf"))
        w, b = layer_norm
        for p in range(min(max_positions, emb.position_embeddings.weight.shape[0])):
            z = torch.nn.functional.layer_norm(words + emb.position_embeddings.weight[p], (words.shape[1],), w, b,
                                               eps=emb.LayerNorm.eps)
            res = (z - (z @ basis.T) @ basis).norm(dim=1) / z.norm(dim=1)
            best = torch.minimum(best, res)
    order = torch.argsort(best)
    return order.tolist(), best[order], rank
