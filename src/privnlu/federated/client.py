"""The ClientApp: TextHide on the client's own data, then a gradient (FedSGD) or local steps (FedAvg).

TextHide Algorithm 2, client side, for round ``t``:

1. load the global model ``W_t`` from the server's message;
2. draw a batch of the client's own examples (secretly), encode it
   (``h(x)``: cached in frozen mode, an encoder forward in joint mode) and hide it
   with Algorithm 1 using the client's *own* mask pool and fresh one-time keys;
3. FedSGD: send ``g_c = grad_W L(W_t; hidden batch)`` and the batch size ``b_c``;
   FedAvg: take ``local_steps`` optimizer steps on fresh hidden batches and send
   the updated weights.

The reply holds exactly one ArrayRecord (``gradients`` or ``arrays``) and one
MetricRecord (``num-examples``, ``train-loss``). The mask pool lives in the
node's ``Context.state`` (kept on the client across rounds, never in a
message); texts, unmixed representations, partners, coefficients and mask ids
never leave this function.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import replace

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from ..data import get_task
from ..errors import PrivnluError
from ..mechanisms.texthide import INF, MaskPool
from ..models import extract_features, load_encoder
from ..models.encoder import SentenceEncoder
from ..rng import SecretGenerator
from ..training import task_loss
from ..training.trainer import evaluate
from .config import FederatedConfig, client_pool_sizes
from .data import ClientData, cached_features, labels_tensor, load_client_data, load_dev, shard_indices
from .model import FederatedModel, build_model, frozen_encoder, tensors_to_record
from .secagg_plus import secagg_plus_mod

POOL_KEY = "privnlu-texthide-pool"
PARTITION_KEY = "partition-id"
NUM_PARTITIONS_KEY = "num-partitions"


def client_rng(cfg: FederatedConfig, partition: int, purpose: str, rnd: int = 0) -> SecretGenerator:
    """The client's secret generator: os.urandom, or (experiments only) derived from the run seed."""
    if cfg.experiment_seed is None:
        return SecretGenerator()
    digest = hashlib.sha256(f"{cfg.seed}/{partition}/{purpose}/{rnd}".encode()).digest()
    return SecretGenerator(int.from_bytes(digest[:8], "little"), warn=False)


def client_pool(cfg: FederatedConfig, partition: int, state: RecordDict, dim: int) -> MaskPool:
    """Client ``partition``'s own pool of ``m_c`` masks, drawn once and kept in the node state."""
    m_c = client_pool_sizes(cfg.m, cfg.clients, cfg.pool_sizes)[partition]
    if m_c == 0 or m_c == INF:
        return MaskPool(m_c, dim)
    if POOL_KEY in state:
        masks = torch.from_numpy(np.array(state[POOL_KEY]["masks"].numpy(), copy=True))
        return MaskPool(m_c, dim, masks)
    pool = MaskPool.generate(m_c, dim, client_rng(cfg, partition, "pool"))
    state[POOL_KEY] = ArrayRecord({"masks": Array(pool.masks.numpy())})  # type: ignore[union-attr]
    return pool


@functools.lru_cache(maxsize=2)
def _joint_encoder(model: str, pooling: str) -> SentenceEncoder:
    """The client process's working copy of the encoder (joint mode loads W_t into it every round)."""
    return load_encoder(model or None, pooling=pooling)


def _encoder(cfg: FederatedConfig) -> SentenceEncoder:
    return frozen_encoder(cfg.model, cfg.pooling) if cfg.mode == "frozen" else _joint_encoder(cfg.model, cfg.pooling)


@functools.lru_cache(maxsize=8)
def _client_data(cfg: FederatedConfig, partition: int) -> ClientData:
    return load_client_data(cfg, partition, _encoder(cfg))


class TextHideClient:
    """One client's state for one round: model, data shard and TextHide with its own pool."""

    def __init__(self, cfg: FederatedConfig, partition: int, state: RecordDict, rnd: int) -> None:
        self.cfg = cfg
        self.partition = partition
        self.encoder = _encoder(cfg)
        self.model: FederatedModel = build_model(cfg, self.encoder)
        self.data = _client_data(cfg, partition)
        self.rng = client_rng(cfg, partition, "round", rnd)
        dim = self.encoder.dim
        self.hider = None
        if cfg.privacy.private:  # the client's own pool, fresh one-time keys per batch
            pool = client_pool(cfg, partition, state, dim)
            self.hider = replace(cfg.privacy, m=pool.m).hider(dim=dim, rng=self.rng, pool=pool)

    def sample(self) -> torch.Tensor:
        n = len(self.data)
        return self.rng.choice(n, min(self.cfg.batch_size, n))

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        """``L(W; hide(h(x_idx), y_idx))`` (Algorithm 1 inside, fresh keys)."""
        x = self.data.represent(idx)
        y = self.data.targets[idx]
        if self.hider is not None:
            hb = self.hider.hide(x, y)
            x, y = hb.x, hb.y
        return task_loss(self.model.head(x), y, regression=self.model.task.is_regression)

    def gradient(self) -> tuple[dict[str, torch.Tensor], float, int]:
        """FedSGD: the gradient on one hidden batch, its loss and its size."""
        params = self.model.named_parameters()
        for mod in self.model.modules().values():
            mod.train()
        idx = self.sample()
        loss = self.loss(idx)
        grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
        out = {n: (g if g is not None else torch.zeros_like(p)) for (n, p), g in zip(params.items(), grads)}
        return out, float(loss.detach()), len(idx)

    def local_steps(self) -> tuple[float, int]:
        """FedAvg: ``local_steps`` Adam steps on fresh hidden batches; returns mean loss and examples seen."""
        cfg = self.cfg
        groups = [{"params": list(self.model.head.parameters()), "lr": cfg.lr}]
        if self.model.encoder is not None:
            groups.append({"params": list(self.model.encoder.parameters()), "lr": cfg.encoder_lr})
        opt = torch.optim.Adam(groups)
        for mod in self.model.modules().values():
            mod.train()
        total, seen = 0.0, 0
        for _ in range(cfg.local_steps):
            idx = self.sample()
            loss = self.loss(idx)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            seen += len(idx)
        return total / max(seen, 1), seen


def replay_batch(cfg: FederatedConfig, partition: int, rnd: int) -> tuple[list[str], list[list[int]]]:
    """AUDITOR ONLY, seeded joint-mode runs: the texts and token ids (padding dropped) of the batch client
    ``partition`` drew in round ``rnd`` (FedSGD), replayed from the experiment seed; never given to an attack. With
    client DP-SGD it is the round's Poisson sample (:func:`.client_dp.replay_poisson_sample`; possibly empty)."""
    if cfg.experiment_seed is None:
        raise PrivnluError("the true batch can be replayed only for a run with --seed (its secrets are os.urandom)")
    if cfg.mode != "joint":
        raise PrivnluError("token-level ground truth needs a joint-mode run (frozen mode sends no encoder gradient)")
    client = TextHideClient(cfg, partition, RecordDict(), rnd)
    if cfg.client_dp_epsilon:
        from .client_dp import replay_poisson_sample

        idx = replay_poisson_sample(cfg, len(client.data), client_rng(cfg, partition, "client-dp", rnd).words(2))
    else:
        idx = client.sample()
    tok = client.data.tokens
    assert tok is not None
    ids = [tok["input_ids"][i][tok["attention_mask"][i].bool()].tolist() for i in idx.tolist()]
    return [client.data.texts[i] for i in idx.tolist()], ids


def client_update(cfg: FederatedConfig, partition: int, state: RecordDict, rnd: int, arrays: ArrayRecord, *,
                  node_id: int | None = None, participants: list[int] | None = None) -> RecordDict:
    """What client ``partition`` sends back for round ``rnd`` (the whole reply content). With client DP-SGD
    (:mod:`.client_dp`) the gradient or the local steps are DP-SGD's; with local noise the gradient is clipped and
    noised here; with secure aggregation (:mod:`.secagg_plus`) Flower's SecAgg+ mod masks this reply.
    ``node_id`` and ``participants`` are unused."""
    client = TextHideClient(cfg, partition, state, rnd)
    client.model.load_arrays(arrays)
    dp = None
    if cfg.client_dp_epsilon:  # sample-level DP: no loss leaves the client (the noise does not cover it)
        from .client_dp import ClientDPRound

        dp = ClientDPRound(client, cfg, client_rng(cfg, partition, "client-dp", rnd).words(2))
    if cfg.algorithm == "fedsgd":
        grads, loss, b = dp.gradient() if dp is not None else client.gradient()
        if cfg.local_noise:
            from .local_noise import add_local_noise

            grads = add_local_noise(grads, clip=cfg.local_clip, multiplier=cfg.local_noise,
                                    rng=client_rng(cfg, partition, "local-noise", rnd))
        return RecordDict({"gradients": tensors_to_record(grads),
                           "metrics": MetricRecord({"num-examples": b, **({} if dp else {"train-loss": loss})})})
    loss, seen = dp.local_steps() if dp is not None else client.local_steps()
    return RecordDict({"arrays": client.model.to_arrays(),
                       "metrics": MetricRecord({"num-examples": seen, **({} if dp else {"train-loss": loss})})})


def client_evaluate(cfg: FederatedConfig, partition: int, state: RecordDict, arrays: ArrayRecord) -> RecordDict:
    """Federated evaluation: score ``W_t`` on this client's shard of the dev split, each example masked
    with a mask from the client's own pool (``eval_mask = pool``, as a key holder would), else unmasked.
    Only the score and the shard size leave the client."""
    task = get_task(cfg.task)
    split = task.eval_splits[0]
    dev = load_dev(cfg)[split]
    rows = shard_indices(len(dev), cfg.clients, partition)
    encoder = _encoder(cfg)
    model = build_model(cfg, encoder)
    model.load_arrays(arrays)
    if cfg.mode == "frozen":
        x = cached_features(cfg, encoder, dev)[torch.from_numpy(rows)]
    else:
        sub = dev.subset(rows.tolist())
        x = extract_features(encoder, sub.texts_a, sub.texts_b, max_length=cfg.max_length, progress=False)
    if cfg.privacy.private and cfg.eval_mask == "pool":
        pool = client_pool(cfg, partition, state, encoder.dim)
        x = replace(cfg.privacy, m=pool.m).hider(dim=encoder.dim, rng=client_rng(cfg, partition, "eval"),
                                                 pool=pool).mask_only(x)
    y = labels_tensor(dev)[torch.from_numpy(rows)]
    score = evaluate(model.head, {split: (x, y)}, task)[split]["score"]
    return RecordDict({"metrics": MetricRecord({"num-examples": len(rows), "score": float(score)})})


def node_partition(context: Context, cfg: FederatedConfig) -> int:
    """This node's partition id, checked against the run's number of clients."""
    nc = context.node_config
    if PARTITION_KEY not in nc:
        raise PrivnluError("this SuperNode has no partition-id; start it with --node-config 'partition-id=N num-partitions=C'")
    part, num = int(nc[PARTITION_KEY]), int(nc.get(NUM_PARTITIONS_KEY, cfg.clients))
    if num != cfg.clients:
        raise PrivnluError(f"this SuperNode says num-partitions={num}, but the run has {cfg.clients} clients")
    return part


def make_client_app(cfg: FederatedConfig | None = None, *, mods: tuple = ()) -> ClientApp:
    """A ClientApp; ``cfg=None`` reads the settings from Flower's run config (deployment)."""
    app = ClientApp(mods=[*mods, secagg_plus_mod])  # SecAgg+ messages (--secagg) go through Flower's mod

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        run_cfg = cfg or FederatedConfig.from_run_config(dict(context.run_config))
        part = node_partition(context, run_cfg)
        rnd = int(msg.content["config"]["server-round"])
        participants = msg.content["config"].get("secagg-participants")
        content = client_update(run_cfg, part, context.state, rnd, msg.content["arrays"], node_id=context.node_id,
                                participants=[int(p) for p in participants] if participants else None)
        return Message(content=content, reply_to=msg)

    @app.evaluate()
    def evaluate_(msg: Message, context: Context) -> Message:
        run_cfg = cfg or FederatedConfig.from_run_config(dict(context.run_config))
        part = node_partition(context, run_cfg)
        return Message(content=client_evaluate(run_cfg, part, context.state, msg.content["arrays"]), reply_to=msg)

    return app
