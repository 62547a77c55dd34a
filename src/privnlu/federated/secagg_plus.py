"""Secure aggregation with Flower's SecAgg+ (``SecAggPlusWorkflow`` on the server, ``secaggplus_mod`` on the clients).

``privnlu federated --secagg`` runs FedSGD (TextHide Algorithm 2) through Flower's SecAgg+ protocol (Bell et al.
2020): each round the sampled clients exchange public keys through the server, Shamir-share their mask seeds among
their neighbours, and upload quantized gradients masked with pairwise and private masks; the server only learns
the sum, and recovers the masks of a client that drops out after sharing its keys from the survivors' shares.

Flower's workflow speaks the legacy ``FitIns``/``FitRes`` API. Two small adapters keep privnlu's Message-API
ServerApp and ClientApp unchanged:

* :class:`SecAggPlusFedSGD` (server) is privnlu's FedSGD strategy whose training step runs one
  :class:`~flwr.server.workflow.SecAggPlusWorkflow` on the Grid (a :class:`~flwr.server.LegacyContext` whose
  strategy is the round's sampled nodes), then applies the decoded mean gradient with the same server optimizer;
* :func:`secagg_plus_mod` (client) passes every non-SecAgg+ message through, and runs Flower's ``secaggplus_mod``
  on SecAgg+ messages with a bridge that hands the client's training function ``W_t`` in the usual Message-API
  form and turns its reply into the vector SecAgg+ sums: ``[g_1 .. g_L, loss / LOSS_SCALE, c/2 clipped fraction, c/2 has loss]``
  with weight ``b_i`` (the batch size, public like in plain FedSGD).

SecAgg+ weights each vector by ``q_i = round(b_i T / W)`` (``W = max_weight`` = the batch size) before the
sum and divides by ``sum_i q_i`` after it, so the server gets ``sum_i b_i g_i / sum_i b_i`` (the FedSGD mean, up to
quantization) and the batch-weighted mean loss. Per coordinate, each client's ``b_i g_i / W`` is clipped to
``[-c, c]`` (``c`` = :func:`clipping_range`) and stochastically rounded to ``T = 2^24`` levels; the masks live mod
``2^32``, so at most ``2^32 / 2^24 = 256`` clients fit in one sum. The decoded mean is unbiased with a
per-coordinate error below ``2 c n W / (T sum_i b_i)`` (``2c / T``, about 1e-6 for ``c = 8`` and full batches).
The fraction of clipped coordinates is part of the secure sum, so the server can tell (and reports) when ``c`` was
too small without seeing any client's values.

A wire capture (:mod:`.wire`) in this mode holds the model sent each round and the decoded aggregate, as one
``gradients`` entry from node 0 (the server) labelled with the number of clients it sums; no client's message.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict

from ..errors import PrivnluError
from .strategy import TextHideFedSGD

QUANTIZATION_RANGE = 2 ** 24  #: T: the levels of one client's quantized coordinate
MODULUS_RANGE = 2 ** 32  #: the masks' modulus (Flower's largest)
MAX_CLIENTS = MODULUS_RANGE // QUANTIZATION_RANGE - 1  #: n T < modulus: the sum of n quantized values never wraps
CLIPPING_RANGE = 8.0  #: c: each client's weighted gradient coordinate is clipped to [-c, c]
LOSS_SCALE = 64.0  #: the loss travels as loss / 64, so that losses up to 64 c stay inside [-c, c]
NUM_SHARES = 1.0  #: every sampled client is every other's neighbour (shares to all)
THRESHOLD = 0.5  #: half of the shares (at least 2) rebuild a dropped client's key
NAMES_KEY = "secagg-array-names"
CLIP_KEY = "secagg-clipping-range"
WEIGHT_KEY = "secagg-max-weight"
SERVER_NODE = 0  #: the node id of the aggregate's entry in a wire capture
AGGREGATE = "secagg"  #: the config record of that entry: the protocol and the clients it sums


def clipping_range(local_clip: float = 0.0, local_noise: float = 0.0) -> float:
    """``c``: 8, or enough for a locally clipped and noised gradient (``C (1 + 6 Z)``), whichever is larger."""
    return max(CLIPPING_RANGE, float(local_clip) * (1.0 + 6.0 * float(local_noise)))


def check_clients(clients: int) -> None:
    """SecAgg+ needs 2 to :data:`MAX_CLIENTS` clients in a round."""
    if not 2 <= clients <= MAX_CLIENTS:
        raise PrivnluError(f"--secagg (Flower's SecAgg+) needs between 2 and {MAX_CLIENTS} clients, not {clients}")


# -- client side ---------------------------------------------------------------------------------------------

def secagg_plus_mod(msg: Message, context: Context, call_next) -> Message:
    """A ClientApp mod: Flower's ``secaggplus_mod`` for SecAgg+ messages, everything else passes through."""
    from flwr.app.message_type import MessageType
    from flwr.client.mod import secaggplus_mod
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS

    if msg.metadata.message_type != MessageType.TRAIN or RECORD_KEY_CONFIGS not in msg.content.config_records:
        return call_next(msg, context)
    return secaggplus_mod(msg, context, lambda m, c: _fit_bridge(m, c, call_next))


def _fit_bridge(msg: Message, context: Context, call_next) -> Message:
    """``FitIns`` -> the ClientApp's Message-API ``train`` -> ``FitRes`` holding the vector SecAgg+ sums."""
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.compat.common import recorddict_compat as compat

    fitins = compat.recorddict_to_fitins(msg.content, keep_input=True)
    names = str(fitins.config[NAMES_KEY]).split("\n")  # legacy configs hold scalars only
    values = parameters_to_ndarrays(fitins.parameters)
    clip, weight = float(fitins.config[CLIP_KEY]), float(fitins.config[WEIGHT_KEY])  # type: ignore[arg-type]
    saved = msg.content  # the same message (its metadata is the reply's), with W_t in the Message-API form
    msg.content = RecordDict({
        "arrays": ArrayRecord({n: Array(np.ascontiguousarray(a)) for n, a in zip(names, values)}),
        "config": ConfigRecord({"server-round": int(fitins.config["server-round"])})})  # type: ignore[arg-type]
    try:
        reply = call_next(msg, context)
    finally:
        msg.content = saved
    if reply.has_error():
        raise RuntimeError(f"the client's training failed: {reply.error.reason}")
    grads, metrics = reply.content["gradients"], reply.content["metrics"]
    b = int(metrics["num-examples"])
    vec = [np.asarray(grads[n].numpy(), dtype=np.float64) for n in names]
    if not all(np.isfinite(a).all() for a in vec):  # it would quantize to garbage: fail, as a dropout
        raise ValueError("a non-finite gradient is not sent to secure aggregation")
    factor = b / weight
    total = sum(a.size for a in vec)
    clipped = sum(int(np.count_nonzero(np.abs(a) * factor > clip)) for a in vec) / max(total, 1)
    has_loss = "train-loss" in metrics  # a client under DP-SGD sends no loss
    loss = float(metrics["train-loss"]) if has_loss else 0.0
    vec += [np.array([loss / LOSS_SCALE]), np.array([clipped * clip / 2]), np.array([clip / 2 if has_loss else 0.0])]
    fitres = FitRes(status=Status(code=Code.OK, message=""), parameters=ndarrays_to_parameters(vec), num_examples=b,
                    metrics={})  # no per-client metric: the loss travels inside the secure sum
    return Message(compat.fitres_to_recorddict(fitres, keep_input=True), reply_to=msg)


# -- server side ---------------------------------------------------------------------------------------------

class _Node:
    """The one field of a legacy ``ClientProxy`` the SecAgg+ workflow reads."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id


class _RoundStrategy:
    """The legacy strategy of one SecAgg+ round: ``FitIns`` for the sampled nodes, and the decoded aggregate kept."""

    def __init__(self, nodes: list[int], fitins) -> None:
        self.nodes, self.fitins = nodes, fitins
        self.aggregate: list[np.ndarray] | None = None
        self.survivors: list[int] = []
        self.examples = 0
        self.failures = 0

    def configure_fit(self, server_round, parameters, client_manager):
        return [(_Node(n), self.fitins) for n in self.nodes]

    def aggregate_fit(self, server_round, results, failures):
        from flwr.common import parameters_to_ndarrays

        if results:
            self.aggregate = parameters_to_ndarrays(results[0][1].parameters)
        self.survivors = sorted(int(p.node_id) for p, _ in results)
        self.examples = sum(int(r.num_examples) for _, r in results)
        self.failures = len(failures)
        return (results[0][1].parameters if results else None), {}


class SecAggPlusFedSGD(TextHideFedSGD):
    """FedSGD whose server sees only the SecAgg+ aggregate (see the module docstring).

    Args:
        clipping_range: ``c`` (:func:`clipping_range`).
        max_weight: ``W``, the largest batch a client sends (the run's batch size).
        timeout: seconds the workflow waits for each stage's replies (``None``: for all of them).
        **kwargs: :class:`~.strategy.TextHideFedSGD`'s.
    """

    def __init__(self, *, clipping_range: float = CLIPPING_RANGE, max_weight: float = 1.0,
                 timeout: float | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clipping_range, self.max_weight, self.timeout = float(clipping_range), float(max_weight), timeout
        self._pending: tuple | None = None

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid) -> Iterable[Message]:
        """Sample the round's nodes (FedAvg's sampling) and keep them for :meth:`aggregate_train`; Flower's plain
        training messages are not sent (SecAgg+ sends its own)."""
        msgs = list(super().configure_train(server_round, arrays, config, grid))
        self._pending = (grid, msgs, arrays, server_round + self.round_offset)
        return []

    def aggregate_train(self, server_round: int, replies: Iterable[Message]):
        self.last_train_metrics = None
        if self._pending is None:
            return None, None
        grid, msgs, arrays, g = self._pending
        self._pending = None
        if not msgs:
            return None, None
        names = list(arrays.keys())
        rs = self._secure_round(grid, [m.metadata.dst_node_id for m in msgs], arrays, names, g)
        log = getattr(grid, "log", None)
        if log is not None:  # a RecordingGrid: the model each client got, then only the decoded aggregate
            for m in msgs:
                log.record_sent(m, g)
        if rs.aggregate is None:
            warnings.warn(f"SecAgg+: round {g} did not complete ({len(msgs)} sampled, too few clients left to "
                          "unmask); the model stays as it was", RuntimeWarning, stacklevel=2)
            return None, None
        *mean, loss, clipped, has_loss = rs.aggregate
        grads = {n: torch.from_numpy(np.asarray(a, dtype=np.float64)).float() for n, a in zip(names, mean)}
        self.apply_gradient(grads)
        if len(rs.survivors) < len(msgs):
            warnings.warn(f"SecAgg+: round {g}: {len(msgs) - len(rs.survivors)} of {len(msgs)} clients dropped out; "
                          "the sum holds the survivors' gradients (the dropped clients' masks were rebuilt from "
                          "their shares)", RuntimeWarning, stacklevel=2)
        clipped_frac = max(0.0, float(clipped[0]) * 2 / self.clipping_range)
        if clipped_frac > 1e-6:
            warnings.warn(f"SecAgg+: round {g}: {clipped_frac:.2%} of the gradient coordinates were clipped to "
                          f"[-{self.clipping_range:g}, {self.clipping_range:g}] before aggregation",
                          RuntimeWarning, stacklevel=2)
        loss_m = {"train-loss": float(loss[0]) * LOSS_SCALE} if float(has_loss[0]) * 2 / self.clipping_range > 0.999 else {}
        self.last_train_metrics = MetricRecord({"num-examples": rs.examples, **loss_m,
                                                "secagg-clients": len(rs.survivors),
                                                "secagg-dropped": len(msgs) - len(rs.survivors),
                                                "secagg-clipped-fraction": clipped_frac})
        if log is not None and log.keep(g):
            log.received.append({
                "round": g, "node_id": SERVER_NODE, "type": "train",
                "arrays": {"gradients": {n: np.asarray(a, dtype=np.float32) for n, a in zip(names, mean)}},
                "metrics": {"metrics": {"num-examples": rs.examples}},
                "configs": {AGGREGATE: {"protocol": "SecAgg+", "aggregate-of": len(rs.survivors),
                                        "nodes": rs.survivors,
                                        "value": "example-weighted mean gradient of the listed clients"}}})
        return self.arrays(), self.last_train_metrics

    def _secure_round(self, grid, nodes: list[int], arrays: ArrayRecord, names: list[str], g: int) -> _RoundStrategy:
        """One run of Flower's SecAgg+ workflow over ``nodes`` (on the unrecorded grid)."""
        from flwr.common import FitIns, ndarrays_to_parameters
        from flwr.server import LegacyContext
        from flwr.server.workflow import SecAggPlusWorkflow
        from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
        from flwr.server.workflow.constant import Key as WorkflowKey

        check_clients(len(nodes))
        inner = getattr(grid, "inner", grid)  # a RecordingGrid keeps no per-client SecAgg+ message
        fitins = FitIns(ndarrays_to_parameters([np.asarray(arrays[n].numpy()) for n in names]),
                        {"server-round": g, NAMES_KEY: "\n".join(names), CLIP_KEY: self.clipping_range,
                         WEIGHT_KEY: self.max_weight})
        rs = _RoundStrategy(sorted(nodes), fitins)
        ctx = LegacyContext(Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config={}),
                            strategy=rs)  # type: ignore[arg-type]
        ctx.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord({WorkflowKey.CURRENT_ROUND: g})
        ctx.state.array_records[MAIN_PARAMS_RECORD] = ArrayRecord()
        workflow = SecAggPlusWorkflow(num_shares=NUM_SHARES, reconstruction_threshold=THRESHOLD,
                                      max_weight=self.max_weight, clipping_range=self.clipping_range,
                                      quantization_range=QUANTIZATION_RANGE, modulus_range=MODULUS_RANGE,
                                      timeout=self.timeout)
        workflow(inner, ctx)
        return rs
