"""In-process simulation with Flower's Simulation Runtime (``flwr.simulation.run_simulation``).

The ServerApp runs in a thread of this process; each virtual client runs the
same ClientApp code as a deployed SuperNode, in Flower's Ray backend actors
(``clients_per_cpu`` decides how many actors share a core). Settings are
checked up front so a bad run fails in one line before Ray starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from ..errors import PrivnluError
from .client import make_client_app
from .config import FederatedConfig
from .data import cached_features, check_shards, load_dev, load_train
from .model import load_config_encoder
from .server import make_server_app
from .wire import WireLog


def preflight(cfg: FederatedConfig) -> None:
    """Fail fast (one line) on settings that would only fail inside a client or the server,
    and in frozen mode fill the feature cache once, so the clients only read it."""
    train = load_train(cfg)
    check_shards(len(train), cfg)
    dev = load_dev(cfg)
    if cfg.model and not Path(cfg.model).is_dir():
        raise PrivnluError(f"--model {cfg.model}: no such folder")
    if cfg.mode == "frozen":
        enc = load_config_encoder(cfg)
        for ds in (train, *dev.values()):
            cached_features(cfg, enc, ds)


@contextlib.contextmanager
def flower_log(verbose: bool):
    """Flower's INFO log only with ``verbose``."""
    logger = logging.getLogger("flwr")
    old = logger.level
    if not verbose:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(old)


def run_inprocess(cfg: FederatedConfig, *, out: Path | None = None, resume: bool = False, wire: WireLog | None = None,
                  round_timeout: float = 600.0, checked: bool = False, verbose: bool = False,
                  client_mods: tuple = ()) -> dict:
    """Run ``cfg`` with the ServerApp loop and ``cfg.clients`` ClientApps in this process (no Ray):
    the same server and client code, sequential clients; for long runs on few cores."""
    from .inprocess import InProcessGrid
    from .server import run_server

    if not checked:
        preflight(cfg)
    grid = InProcessGrid(make_client_app(cfg, mods=client_mods), cfg.clients)
    with flower_log(verbose):
        return run_server(grid, cfg, out=out, resume=resume, wire=wire, round_timeout=round_timeout)


def run_simulation(cfg: FederatedConfig, *, out: Path | None = None, resume: bool = False, wire: WireLog | None = None,
                   client_mods: tuple = (), num_cpus: int | None = None, verbose: bool = False,
                   round_timeout: float = 600.0, checked: bool = False) -> dict:
    """Run ``cfg`` with ``cfg.clients`` virtual SuperNodes and return the results record."""
    from flwr.simulation import run_simulation as flwr_run_simulation

    if not checked:
        preflight(cfg)
    cpus = num_cpus or max(1, min(os.cpu_count() or 1, cfg.clients))
    results: list[dict] = []
    server = make_server_app(cfg, out=out, resume=resume, wire=wire, results=results, round_timeout=round_timeout)
    client = make_client_app(cfg, mods=client_mods)
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    try:
        with flower_log(verbose):
            flwr_run_simulation(
                server_app=server, client_app=client, num_supernodes=cfg.clients,
                backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                "init_args": {"num_cpus": cpus, "num_gpus": 0, "include_dashboard": False,
                                              "logging_level": "error", "log_to_driver": verbose}},
            )
    except PrivnluError:
        raise
    except Exception as exc:  # Ray failing to start on an overloaded machine, a crashed ServerApp, ...
        if verbose:
            raise
        root = exc
        while root.__cause__ is not None:
            root = root.__cause__
        first = str(root).strip().splitlines()[0] if str(root).strip() else type(root).__name__
        raise PrivnluError(f"Flower's simulation failed: {first} (rerun with --verbose for Flower's traceback)") from None
    if not results:
        raise PrivnluError("the federated run ended without a result (see the Flower log above)")
    return results[0]
