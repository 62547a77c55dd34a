"""Start a federated run (``privnlu federated``): Flower's simulation runtime, the in-process backend, or a
deployment to a running SuperLink."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import PrivnluError
from .config import FederatedConfig


def launch(cfg: FederatedConfig, *, out: Path | None = None, backend: str = "ray", deploy: bool = False,
           superlink: str = "", app_dir: Path | None = None, resume: bool = False, record_wire: int = 0,
           round_timeout: float = 600.0, verbose: bool = False, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run ``cfg`` and return its results record (after a deployment, whose record lands on the server, the
    return code of ``flwr run``);
    ``out`` defaults to ``runs/federated/<label>``. Every setting is checked before anything starts."""
    if deploy and not superlink:
        raise PrivnluError("--deploy needs the SuperLink address: --superlink HOST:PORT (its Control API, e.g. "
                           "127.0.0.1:9093)")
    if superlink and not deploy:
        raise PrivnluError("--superlink is for --deploy; without --deploy privnlu runs the in-process simulation")
    if not round_timeout > 0:
        raise PrivnluError(f"--round-timeout must be positive, not {round_timeout}")
    if cfg.secagg and (deploy or backend != "inprocess"):
        raise PrivnluError("--secagg needs --backend inprocess (privnlu deals the pairwise mask seeds to in-process "
                           "clients; Flower's SecAgg+ workflow is not wired in)")
    if cfg.train_embeddings:
        from .model import EMBEDDING_LEAK_WARNING

        log(f"WARNING: {EMBEDDING_LEAK_WARNING}")
    out = out or Path("runs/federated") / cfg.label
    if deploy:
        from .deploy import deploy as submit

        code = submit(cfg, out=out, superlink=superlink, app_dir=app_dir, resume=resume, record_wire=record_wire,
                      round_timeout=round_timeout)
        return {"kind": "deployment", "returncode": code, "out": str(out)}
    from .simulation import preflight, run_inprocess, run_simulation
    from .wire import WireLog

    preflight(cfg)
    wire = WireLog(record_wire) if record_wire else None
    scheme = cfg.privacy
    log(f"privnlu federated: {cfg.clients} clients, {cfg.rounds} rounds, {cfg.algorithm}, "
        f"{scheme.describe() if scheme.release != 'none' else 'no privacy'}"
        f"{f', DP-FedSGD z = {cfg.dp_noise_multiplier:.4g}' if cfg.dp_clip else ''}"
        f"{', secure aggregation' if cfg.secagg else ''}"
        f"{f', local noise z = {cfg.local_noise:g} (C = {cfg.local_clip:g})' if cfg.local_noise else ''}; "
        f"{'in-process clients' if backend == 'inprocess' else 'starting Flower simulation'}")
    run = run_inprocess if backend == "inprocess" else run_simulation
    return run(cfg, out=out, resume=resume, wire=wire, round_timeout=round_timeout, checked=True, verbose=verbose)
