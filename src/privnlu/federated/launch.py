"""Start a federated run (``privnlu federated``): Flower's simulation runtime, the in-process backend, or a
deployment to a running SuperLink."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

from ..errors import PrivnluError
from .config import FederatedConfig

#: the committed measurement of the span attack on per-client messages and SecAgg+ aggregates
LEAK_RECORDS = Path("results/huang2020/federated-sentence-recovery-secagg")
LEAK_RECIPE = "huang2020-federated-sentence-recovery-secagg"


def _cells(root: Path | None) -> dict[tuple[int, int], tuple[float, str]]:
    """``(clients, batch size) -> (exact-sentence rate of what the server sees, record)`` from the committed
    records: the plain message for one client, the SecAgg+ decoded aggregate for more."""
    base = root or Path(__file__).resolve().parents[3] / LEAK_RECORDS
    cells: dict[tuple[int, int], tuple[float, str]] = {}
    for f in base.glob("aggregate_c*_b*.json"):
        try:
            rec = json.loads(f.read_text())
            seen = [r for r in rec["results"] if r.get("quantized")] or rec["results"][:1]
            cells[(int(rec["settings"]["clients"]), int(rec["settings"]["batch_size"]))] = (
                float(seen[0]["exact"]), str(LEAK_RECORDS / f.name))
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
    return cells


def aggregate_leak(clients: int, batch_size: int, root: Path | None = None) -> tuple[int, int, float, str] | None:
    """``(clients, batch size, exact rate, record)`` of the measured SecAgg+ aggregate with the most sentences per
    round up to ``clients * batch_size`` (None without such a record)."""
    fit = [(n * b, n, b, *v) for (n, b), v in _cells(root).items() if n >= 2 and n * b <= clients * batch_size]
    return max(fit)[1:] if fit else None


def measured_leak(batch_size: int, root: Path | None = None) -> list[tuple[int, float, str]]:
    """``(batch size, exact-sentence rate, record)`` of the span attack on one client's plain message, read off the
    committed records (client dropout off): batch size 1 and the largest measured batch size up to ``batch_size``.
    Empty when the records are not there (an installed package)."""
    found = {b: v for (n, b), v in _cells(root).items() if n == 1}
    if not found:
        return []
    near = max((b for b in found if b <= batch_size), default=min(found))
    return [(b, *found[b]) for b in sorted({min(found), near})]


def unprotected_warning(batch_size: int, root: Path | None = None) -> str:
    """The warning of ``--unprotected``, with the measured figures (:func:`measured_leak`)."""
    head = ("--unprotected: the server and any eavesdropper get each client's encoder gradient, from which the span "
            "attack (`privnlu attack gradient --wire --method span`) recovers the client's sentences")
    rows = measured_leak(batch_size, root)
    if not rows:
        return head + f" (measured by `privnlu reproduce {LEAK_RECIPE}`)"
    figures = " and ".join(f"{e:.0%} at batch size {b}" for b, e, _ in rows)
    return (head + f": exact sentences from one message, {figures} (SST-2, MiniLM, client dropout off; "
            f"{', '.join(r for _, _, r in rows)}); SecAgg+, the default, hides the per-client messages")


def small_aggregate_warning(clients: int, batch_size: int, root: Path | None = None) -> str | None:
    """A warning when the measured SecAgg+ aggregate nearest below ``clients x batch_size`` sentences still gave
    more than 5 % of them back (the union had fewer token slots than the hidden size); None otherwise."""
    cell = aggregate_leak(clients, batch_size, root)
    if cell is None or cell[2] <= 0.05:
        return None
    n, b, exact, record = cell
    return (f"the server sees the sum of {clients} x {batch_size} sentences per round; the span attack recovered "
            f"{exact:.0%} of them exactly from the SecAgg+ aggregate of {n} clients x {b} ({record}, client dropout "
            "off): a larger --batch-size or more clients put more token slots in the sum")


def with_protection(cfg: FederatedConfig) -> FederatedConfig:
    """The settings a run starts with. Joint mode (the clients send encoder gradients) defaults to Flower's SecAgg+
    where it applies (fedsgd, 2 or more sampled clients, no --dp-clip); where it does not, the run needs client
    DP-SGD or an explicit --unprotected."""
    from .secagg_plus import MAX_CLIENTS

    if cfg.mode != "joint" or cfg.secagg or cfg.unprotected:
        return cfg
    sampled = cfg.sampled_clients
    if cfg.algorithm == "fedsgd" and 2 <= sampled <= MAX_CLIENTS and not cfg.dp_clip:
        return dataclasses.replace(cfg, secagg=True)
    if cfg.client_dp_epsilon:
        return cfg
    why = ("--algorithm fedavg" if cfg.algorithm != "fedsgd" else "--dp-clip (the server clips each client's "
           "gradient)" if cfg.dp_clip else f"{sampled} client{'s' if sampled > 1 else ''} per round (SecAgg+ takes "
           f"2 to {MAX_CLIENTS})")
    raise PrivnluError(f"--mode joint sends each client's encoder gradient, and secure aggregation (SecAgg+, the "
                       f"default) cannot run with {why}: add --client-dp-epsilon, change the setting, or pass "
                       "--unprotected to send the gradients in the clear")


def protection_line(cfg: FederatedConfig, defaulted: bool) -> str:
    """What the server can see, said at start-up."""
    if cfg.secagg:
        return (f"protection: SecAgg+ secure aggregation{' (the joint-mode default)' if defaulted else ''}, the "
                f"server sees only the sum of the {cfg.sampled_clients} clients' gradients")
    if cfg.mode == "joint":
        return ("protection: client-side DP-SGD, no secure aggregation" if cfg.client_dp_epsilon and not
                cfg.unprotected else "protection: NONE, every client's encoder gradient goes to the server (--unprotected)")
    return ("protection: encoder frozen on the clients, which send head gradients only"
            + (" under client-side DP-SGD" if cfg.client_dp_epsilon else ""))


def announce(cfg: FederatedConfig, defaulted: bool, log: Callable[[str], None]) -> None:
    """Say at start-up (every setting checked) which protection is on, with the measured warnings."""
    log(f"privnlu federated: {protection_line(cfg, defaulted)}")
    if cfg.unprotected:
        log(f"WARNING: {unprotected_warning(cfg.batch_size)}")
    elif cfg.secagg and cfg.mode == "joint" and (small := small_aggregate_warning(cfg.sampled_clients,
                                                                                  cfg.batch_size)):
        log(f"WARNING: {small}")
    if cfg.train_embeddings:
        from .model import EMBEDDING_LEAK_WARNING

        log(f"WARNING: {EMBEDDING_LEAK_WARNING}" + (" SecAgg+ does not hide it: the sum's non-zero rows are the union "
                                                    "of the clients' token ids." if cfg.secagg else ""))


def launch(cfg: FederatedConfig, *, out: Path | None = None, backend: str = "ray", deploy: bool = False,
           superlink: str = "", app_dir: Path | None = None, resume: bool = False, record_wire: int = 0,
           round_timeout: float = 600.0, verbose: bool = False, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run ``cfg`` (with :func:`with_protection`'s default) and return its results record (after a deployment,
    whose record lands on the server, the return code of ``flwr run``);
    ``out`` defaults to ``runs/federated/<label>``. Every setting is checked before anything starts."""
    if deploy and not superlink:
        raise PrivnluError("--deploy needs the SuperLink address: --superlink HOST:PORT (its Control API, e.g. "
                           "127.0.0.1:8000)")
    if superlink and not deploy:
        raise PrivnluError("--superlink is for --deploy; without --deploy privnlu runs the in-process simulation")
    if not round_timeout > 0:
        raise PrivnluError(f"--round-timeout must be positive, not {round_timeout}")
    given_secagg = cfg.secagg
    cfg = with_protection(cfg)
    if cfg.secagg:
        from .secagg_plus import check_clients

        check_clients(cfg.clients)
    out = out or Path("runs/federated") / cfg.label
    if deploy:
        from .deploy import check_reachable, deploy as submit

        check_reachable(superlink)  # before any work or warning: one line if nothing listens there
        announce(cfg, cfg.secagg and not given_secagg, log)
        code = submit(cfg, out=out, superlink=superlink, app_dir=app_dir, resume=resume, record_wire=record_wire,
                      round_timeout=round_timeout)
        return {"kind": "deployment", "returncode": code, "out": str(out)}
    if resume:  # an older pickle checkpoint is refused before anything starts, never opened
        from ..models.checkpoint import refuse_legacy

        refuse_legacy(out / "checkpoint.pt")
    from .simulation import preflight, run_inprocess, run_simulation
    from .wire import WireLog

    preflight(cfg)
    announce(cfg, cfg.secagg and not given_secagg, log)
    wire = WireLog(record_wire) if record_wire else None
    scheme = cfg.privacy
    log(f"privnlu federated: {cfg.clients} clients, {cfg.rounds} rounds, {cfg.algorithm}, "
        f"{scheme.describe() if scheme.private else 'no privacy'}"
        f"{f', DP-FedSGD z = {cfg.dp_noise_multiplier:.4g}' if cfg.dp_clip else ''}"
        f"{', secure aggregation (Flower SecAgg+)' if cfg.secagg else ''}"
        f"{f', local noise z = {cfg.local_noise:g} (C = {cfg.local_clip:g})' if cfg.local_noise else ''}; "
        f"{'in-process clients' if backend == 'inprocess' else 'starting Flower simulation'}")
    run = run_inprocess if backend == "inprocess" else run_simulation
    return run(cfg, out=out, resume=resume, wire=wire, round_timeout=round_timeout, checked=True, verbose=verbose)
