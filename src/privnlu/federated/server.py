"""The ServerApp: global model, strategy, central evaluation, checkpoints and the results record.

Each round Flower's strategy loop sends ``W_t`` to the sampled clients,
aggregates their replies (:mod:`.strategy`) and then calls our evaluation hook,
which scores the global model on the task's dev split (unmixed, unmasked
representations: the server holds no key) every ``eval_every`` rounds and writes
an atomic checkpoint every ``checkpoint_every`` rounds (and at the end). At the end
it writes the global model to ``<out>/model/`` (Hugging Face layout and a model card,
applied by ``privnlu predict`` as the server evaluated it), then ``result.json``. With
``resume`` the server restores the model, the server optimizer and the history
from the checkpoint and runs only the remaining rounds.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import torch
from pydantic import ConfigDict, Field, JsonValue
from tqdm.auto import tqdm
from flwr.app import ConfigRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp

from ..version import __version__
from ..errors import PrivnluError
from ..io import SECRET_MODE, write_json_atomic
from ..models import checkpoint as ckpt
from ..models import config_summary, extract_features
from ..training.trainer import evaluate
from .config import FederatedConfig, client_pool_sizes
from .data import cached_features, labels_tensor, load_dev, load_train
from .model import build_model, load_config_encoder
from ..rng import SecretGenerator
from .dp import DPFedSGD
from .secagg_plus import SecAggPlusFedSGD, clipping_range
from .strategy import FedAvgTextHide, ResumableRounds, TextHideFedSGD
from .wire import WIRE_FILE, RecordingGrid, WireLog

CHECKPOINT = "checkpoint.pt"  # the name its pair is derived from: checkpoint.safetensors + checkpoint.json
RESULT = "result.json"
MODEL_DIR = "model"  # the global model in the Hugging Face layout (privnlu.model_folder.export.export_federated_model)
WIRE = WIRE_FILE


def _resume_key(cfg: FederatedConfig, run_dir: Path | None = None) -> dict:
    """The settings a checkpoint must match to be resumed; with ``run_dir``, their paths written as the run folder
    shares them (:func:`~privnlu.schemas.paths.shareable`: relative, or a reference), never this machine's."""
    from ..schemas import shareable

    d = asdict(cfg)
    if not cfg.client_dp_epsilon:  # client DP-SGD's noise is calibrated for exactly --rounds
        d.pop("rounds")  # a resumed run may go on for more rounds
    d.pop("eval_every")
    d.pop("checkpoint_every")
    return d if run_dir is None else shareable(d, run_dir)


def make_strategy(cfg: FederatedConfig, initial: dict[str, torch.Tensor]) -> ResumableRounds | DPFedSGD:
    """The strategy for ``cfg``: FedSGD (Algorithm 2) or FedAvg, with secure aggregation and client-level DP
    wrapped around it where asked; no client-side evaluation rounds."""
    client_eval = cfg.eval_mask == "pool" and cfg.privacy.private and cfg.eval_every > 0
    # FedAvg sizes a round's sample from the nodes connected at that instant; a floor of fraction x the nodes it
    # waits for keeps a round from sampling fewer when nodes register late (Flower's simulation engine, a SuperLink)
    fraction_evaluate = 1.0 if client_eval else 0.0
    common = dict(fraction_train=cfg.fraction_train, fraction_evaluate=fraction_evaluate,
                  min_train_nodes=max(int(cfg.min_available * cfg.fraction_train), 1),
                  min_evaluate_nodes=max(int(cfg.min_available * fraction_evaluate), 1),
                  min_available_nodes=cfg.min_available)
    strategy: ResumableRounds
    if cfg.algorithm == "fedsgd":
        if cfg.secagg:  # Flower's SecAgg+: the server sees only the weighted sum of the clients' gradients
            common.update(clipping_range=clipping_range(cfg.local_clip, cfg.local_noise), max_weight=cfg.batch_size)
        fedsgd: type[TextHideFedSGD] = SecAggPlusFedSGD if cfg.secagg else TextHideFedSGD
        strategy = fedsgd(initial=initial, lr=cfg.lr, encoder_lr=cfg.encoder_lr, optimizer=cfg.server_optimizer,
                          **common)
    else:
        strategy = FedAvgTextHide(**common)
    strategy.eval_every, strategy.total_rounds = cfg.eval_every, cfg.rounds
    if cfg.dp_clip:
        seed = cfg.experiment_seed
        rng = SecretGenerator(None if seed is None else seed * 7919 + 104_729, warn=False)
        return DPFedSGD(strategy, noise_multiplier=cfg.dp_noise_multiplier, clipping_norm=cfg.dp_clip,  # type: ignore[arg-type]
                        num_sampled_clients=cfg.sampled_clients, delta=cfg.dp_delta, rng=rng)
    return strategy


def run_server(grid: Grid, cfg: FederatedConfig, *, out: Path | None, resume: bool = False,
               wire: WireLog | None = None, round_timeout: float = 600.0) -> dict:
    """Run all (remaining) rounds on ``grid`` and return the ``kind: federated`` results record."""
    t0 = time.time()
    if out is not None and resume:
        ckpt.refuse_legacy(out / CHECKPOINT)  # before any work; an older pickle checkpoint is never opened
    encoder = load_config_encoder(cfg)
    model = build_model(cfg, encoder, init_seed=cfg.experiment_seed)
    task = model.task
    dev = load_dev(cfg)
    dev_y = {s: labels_tensor(ds) for s, ds in dev.items()}
    dev_x = {s: cached_features(cfg, encoder, ds) for s, ds in dev.items()} if cfg.mode == "frozen" else None

    def eval_sets():
        if dev_x is not None:
            return {s: (dev_x[s], dev_y[s]) for s in dev}
        return {s: (extract_features(encoder, ds.texts_a, ds.texts_b, max_length=cfg.max_length, progress=False), dev_y[s])
                for s, ds in dev.items()}

    initial = {n: p.detach().clone() for n, p in model.named_parameters().items()}
    strategy = make_strategy(cfg, initial)
    if isinstance(strategy, SecAggPlusFedSGD):
        strategy.timeout = round_timeout  # each SecAgg+ stage waits at most this long for its replies
    history: list[dict] = []
    done = 0
    ckpt_path = out / CHECKPOINT if out is not None else None
    if ckpt_path is not None and resume and ckpt.exists(ckpt_path):
        done, history = _restore(ckpt_path, cfg, model, strategy)
    strategy.round_offset = done
    bar = tqdm(total=cfg.rounds, initial=done, desc="federated rounds", unit="round")

    def on_round(rnd: int, arrays) -> MetricRecord | None:
        if rnd == 0:
            return None
        g = done + rnd
        bar.update(1)
        model.load_arrays(arrays)
        entry: dict = {"round": g, "seconds": round(time.time() - t0, 2)}
        tm = strategy.last_train_metrics
        if tm is not None and "train-loss" in tm:
            entry["train_loss"] = float(tm["train-loss"])
        if tm is not None and "secagg-clients" in tm:  # what SecAgg+ reveals: how many clients the sum holds
            entry["secagg"] = {k.removeprefix("secagg-"): tm[k] for k in
                               ("secagg-clients", "secagg-dropped", "secagg-clipped-fraction")}
        if (cfg.eval_every and g % cfg.eval_every == 0) or g == cfg.rounds:
            entry["eval"] = evaluate(model.head, eval_sets(), task)
            if isinstance(strategy, DPFedSGD):  # the PLD accountant takes seconds: only at evaluations
                entry["dp_epsilon"] = strategy.epsilon()
        em = strategy.last_eval_metrics
        if em is not None and "score" in em:
            entry["client_eval_score"] = float(em["score"])
        history.append(entry)
        if ckpt_path is not None and ((cfg.checkpoint_every and g % cfg.checkpoint_every == 0) or g == cfg.rounds):
            _save(ckpt_path, cfg, model, strategy, g, history)
        if wire is not None and out is not None:
            wire.save(out / WIRE)
        ev = entry.get("eval")
        bar.set_postfix({k: v for k, v in (("loss", entry.get("train_loss")),
                                            ("dev", ev[task.eval_splits[0]]["score"] if ev else None)) if v is not None},
                        refresh=False)
        return MetricRecord({"score": float(ev[task.eval_splits[0]]["score"])}) if ev else None

    remaining = cfg.rounds - done
    if remaining > 0:
        g = RecordingGrid(grid, wire) if wire is not None else grid
        try:
            result = strategy.start(grid=g, initial_arrays=model.to_arrays(), num_rounds=remaining,
                                    train_config=ConfigRecord(), evaluate_fn=on_round, timeout=round_timeout)
        finally:
            bar.close()
        model.load_arrays(result.arrays)
    bar.close()
    evals = [h for h in history if "eval" in h]
    if not evals:
        raise PrivnluError("the run finished without an evaluation; set --eval-every or check the checkpoint")
    first = task.eval_splits[0]
    final = evals[-1]["eval"]
    client_scores = [h["client_eval_score"] for h in history if "client_eval_score" in h]
    n_train = len(load_train(cfg))
    record = {
        "kind": "federated",
        "privnlu": __version__,
        "label": cfg.label,
        "task": cfg.task,
        "algorithm": cfg.algorithm,
        "mode": cfg.mode,
        "train_embeddings": cfg.train_embeddings,
        "scheme": cfg.scheme,
        "m": cfg.m,
        "k": cfg.k,
        "clients": cfg.clients,
        "pool_sizes": [str(s) for s in client_pool_sizes(cfg.m, cfg.clients, cfg.pool_sizes)],
        "rounds": cfg.rounds,
        "metric": task.metric,
        "eval": final,
        # the headline score: clients' pool-masked federated evaluation when they ran one, else the server's
        "score": client_scores[-1] if client_scores else final[first]["score"],
        "best_score": max(client_scores) if client_scores else max(h["eval"][first]["score"] for h in evals),
        "score_source": "clients, own-pool-masked dev shards" if client_scores else "server, unmasked dev",
        "server_score": final[first]["score"],
        "eval_mask": cfg.eval_mask,
        "n_train": n_train,
        "encoder": config_summary(encoder),
        "config": asdict(cfg),
        "experiment_seed": cfg.experiment_seed,
        "history": history,
        "seconds": round(time.time() - t0, 2),
    }
    if cfg.client_dp_epsilon:  # sample-level DP of every message (client-side DP-SGD), accounted per client
        from .client_dp import client_dp_report

        record["client_dp"] = client_dp_report(cfg, n_train)
        record["guarantee"] = record["client_dp"]["guarantee"]
    if isinstance(strategy, DPFedSGD):
        record["dp"] = strategy.report()
        record["label"] += f"-dp{strategy.noise_multiplier:.3g}"
    if out is not None:
        from ..model_folder.export import export_federated_model

        # the global model first, the results JSON last (as privnlu train does)
        export_federated_model(out / MODEL_DIR, record=record, cfg=cfg, head=model.head, encoder=encoder,
                               label_names=task.label_names, pair=any(ds.is_pair for ds in dev.values()))
        record["model_dir"] = MODEL_DIR
        from ..schemas import shareable

        write_json_atomic(out / RESULT, shareable(record, out))  # no local path in a file one may share
    return record


class RoundEntry(ckpt.Strict):
    """One round of the history (what the results record keeps; a JSON value under another name is kept as is)."""

    model_config = ConfigDict(strict=True, extra="allow", allow_inf_nan=False)

    round: Annotated[int, Field(ge=1)]
    seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    train_loss: ckpt.Recorded = None
    eval: dict[str, dict[str, JsonValue]] | None = None
    dp_epsilon: ckpt.Recorded = None
    client_eval_score: ckpt.Recorded = None


class StrategyCheckpoint(ckpt.Strict):
    """The server strategy's non-tensor state: its optimizer (FedSGD), and the DP wrapper's counters."""

    optimizer: ckpt.OptimizerMeta | None
    dp_releases: Annotated[int, Field(ge=0)] | None
    dp_noise_multiplier: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None
    dp_noise_state: ckpt.PCG64State | None


class FederatedCheckpoint(ckpt.Strict):
    """The JSON side of a ``privnlu federated`` checkpoint."""

    round: Annotated[int, Field(ge=1)]
    history: list[RoundEntry]
    config: dict[str, JsonValue]
    strategy: StrategyCheckpoint


def _inner(strategy):
    """The aggregation strategy inside a DP wrapper (or the strategy itself)."""
    return strategy.strategy if isinstance(strategy, DPFedSGD) else strategy


def _save(path: Path, cfg: FederatedConfig, model, strategy, rnd: int, history: list[dict]) -> None:
    """The server's private state, owner-readable only (a seeded DP run's noise stream position is in it)."""
    tensors = {f"params.{n}": p for n, p in model.named_parameters().items()}
    inner = _inner(strategy)
    meta: dict = {"optimizer": None, "dp_releases": None, "dp_noise_multiplier": None, "dp_noise_state": None}
    if isinstance(inner, TextHideFedSGD):
        tensors.update({f"strategy.params.{n}": p for n, p in inner.params.items()})
        opt_tensors, meta["optimizer"] = ckpt.flatten_optimizer(inner.optimizer, "strategy.optimizer")
        tensors.update(opt_tensors)
    if isinstance(strategy, DPFedSGD):
        meta.update(dp_releases=strategy.releases, dp_noise_multiplier=strategy.noise_multiplier,
                    dp_noise_state=strategy.rng.experiment_state())
    ckpt.save(path, written_by="federated", step=rnd, mode=SECRET_MODE, tensors=tensors, state={
        "round": rnd, "history": history, "config": _resume_key(cfg, path.parent), "strategy": meta})


def _restore(path: Path, cfg: FederatedConfig, model, strategy) -> tuple[int, list[dict]]:
    """Check the checkpoint against this run's settings, model and strategy before anything is loaded, then load it."""
    c = ckpt.load(path, written_by="federated", state=FederatedCheckpoint)
    blob: FederatedCheckpoint = c.state
    saved = dict(blob.config)
    # a checkpoint from before a setting existed ran with that setting's default
    if "train_embeddings" not in saved and saved.get("mode") == "joint":
        saved = {**saved, "train_embeddings": True}  # checkpoints that predate the setting trained the tables
    defaults = _resume_key(FederatedConfig(task=cfg.task), path.parent)
    saved = {**{k: v for k, v in defaults.items() if k not in saved}, **saved}
    if not (ckpt.same_settings(saved, _resume_key(cfg, path.parent))  # checkpoints before paths were portable:
            or ckpt.same_settings(saved, {**_resume_key(FederatedConfig(task=cfg.task)), **_resume_key(cfg)})):
        hint = ""
        if saved.get("train_embeddings") and not cfg.train_embeddings:
            hint = " (it trained the embedding tables, which leaks the clients' words; start a new run)"
        raise PrivnluError(f"checkpoint {c.path} is from a run with other settings{hint}; delete it or use another --out")
    if blob.round != c.step or [h.round for h in blob.history] != list(range(1, blob.round + 1)):
        raise c.error(f"round {blob.round} with a history of rounds {[h.round for h in blob.history][:5]}")
    live = {n: p.detach() for n, p in model.named_parameters().items()}
    params = ckpt.load_tensors(c, "params", live)
    inner, st = _inner(strategy), blob.strategy
    state: dict = {}
    if isinstance(inner, TextHideFedSGD):
        if st.optimizer is None:
            raise c.error("no server optimizer state for FedSGD")
        state = {"params": ckpt.load_tensors(c, "strategy.params", {n: p.detach() for n, p in inner.params.items()})}
    elif st.optimizer is not None:
        raise c.error("a server optimizer state, but this run's strategy has none")
    if isinstance(strategy, DPFedSGD):
        if st.dp_releases is None or st.dp_noise_multiplier is None:
            raise PrivnluError("the checkpoint was written with other DP settings (a different noise multiplier, or "
                               "none); resume with the same --dp-* settings and --rounds")
        if (st.dp_noise_state is None) != (strategy.rng.experiment_state() is None):
            raise c.error("the DP noise stream's position does not match the seed")
        state = {"wrapped": state, "releases": st.dp_releases, "noise_multiplier": st.dp_noise_multiplier,
                 "noise_state": st.dp_noise_state.model_dump() if st.dp_noise_state else None}
    elif st.dp_releases is not None:
        raise PrivnluError("the checkpoint was written with other DP settings (a different noise multiplier, or "
                           "none); resume with the same --dp-* settings and --rounds")
    from .model import tensors_to_record

    if isinstance(inner, TextHideFedSGD):
        assert st.optimizer is not None
        ckpt.load_optimizer(c, "strategy.optimizer", st.optimizer, inner.optimizer)
        opt_state = inner.optimizer.state_dict()
        if isinstance(strategy, DPFedSGD):
            state["wrapped"]["optimizer"] = opt_state
        else:
            state["optimizer"] = opt_state
    model.load_arrays(tensors_to_record(params))
    strategy.load_state_dict(state)
    return blob.round, [h.model_dump(exclude_none=True) for h in blob.history]


def make_server_app(cfg: FederatedConfig | None = None, *, out: Path | None = None, resume: bool = False,
                    wire: WireLog | None = None, results: list | None = None, round_timeout: float | None = None) -> ServerApp:
    """A ServerApp. ``cfg=None`` reads the settings (and ``out``/``resume``/``record-wire``) from
    Flower's run config, as in a ``flwr run`` deployment; ``results`` collects the record in-process."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        rc = dict(context.run_config)
        run_cfg = cfg or FederatedConfig.from_run_config(rc)
        run_out = out if out is not None else (Path(str(rc["out"])) if rc.get("out") else None)
        run_resume = resume or bool(rc.get("resume", False))
        run_wire = wire
        if run_wire is None and int(rc.get("record-wire", 0) or 0):
            run_wire = WireLog(int(rc["record-wire"]))
        rec = run_server(grid, run_cfg, out=run_out, resume=run_resume, wire=run_wire,
                         round_timeout=round_timeout or float(rc.get("round-timeout", 600.0)))
        if results is not None:
            results.append(rec)

    return app
