"""Real deployments: write a Flower app for privnlu's apps and submit it with Flower's ``flwr run``.

The processes are Flower's own (see docs/design/federated.md)::

    flower-superlink --insecure --host 0.0.0.0 --port 8000       # the server machine (Fleet and Control API)
    flower-supernode --insecure --superlink SERVER:8000 \\
        --node-config "partition-id=0 num-partitions=2" --port 9094  # one per client machine
    privnlu federated --deploy --superlink SERVER:8000 --clients 2 ...  # submits the run

Flower's processes start ``flower-superexec`` and ``flwr-serverapp``/``flwr-clientapp`` from ``PATH`` (activate the
environment first); ``--disable-runtime-dependency-installation`` keeps the SuperLink from calling ``uv sync``
on a machine without an index. With ``--secagg`` the same apps run Flower's SecAgg+ (:mod:`.secagg_plus`): the
ServerApp drives ``SecAggPlusWorkflow`` and every ClientApp carries ``secaggplus_mod``.

:func:`write_app` writes ``pyproject.toml`` (components ``privnlu.federated.app:server_app`` /
``client_app`` and the run settings as ``[tool.flwr.app.config]``) and a private Flower
configuration (``FLWR_HOME``) naming the SuperLink connection; :func:`deploy` then runs
``flwr run APP privnlu --stream``. privnlu must be installed on every machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..errors import PrivnluError
from ..io import write_text_atomic
from .config import FederatedConfig

CONNECTION = "privnlu"
CLIENTAPP = "privnlu.federated.app:client_app"
#: seconds a reachability check waits for the SuperLink to accept a TCP connection
REACH_TIMEOUT = 3.0


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_address(address: str) -> str:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PrivnluError(f"--superlink must be HOST:PORT (the SuperLink's Control API, e.g. 127.0.0.1:8000), not '{address}'")
    return address


def check_reachable(address: str, timeout: float = REACH_TIMEOUT) -> None:
    """Refuse, in one line, a SuperLink address where nothing accepts a TCP connection within ``timeout`` seconds
    (``flwr run`` would retry for about 35 s and print a box); a refused connection is retried until then (a
    SuperLink still starting), and the connection is closed at once."""
    host, _, port = check_address(address).rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:8000
    deadline = time.monotonic() + timeout
    while True:  # a refused connection returns at once: try again until the deadline (a SuperLink still starting)
        try:
            with socket.create_connection((host, int(port)), timeout=max(0.1, deadline - time.monotonic())):
                return
        except OSError as exc:
            if time.monotonic() + 0.25 < deadline and not isinstance(exc, (socket.timeout, socket.gaierror)):
                time.sleep(0.25)
                continue
            why = "timed out" if isinstance(exc, socket.timeout) else (exc.strerror or type(exc).__name__)
            raise PrivnluError(f"--superlink {address}: no SuperLink answers there within {timeout:g} s ({why}); "
                               "start flower-superlink on that machine first, or check the address and port") from None


def write_app(app_dir: Path, cfg: FederatedConfig, *, superlink: str, out: Path, resume: bool, record_wire: int,
              round_timeout: float, insecure: bool = True, clientapp: str = CLIENTAPP) -> Path:
    """Write the Flower app folder and its FLWR_HOME; return the app folder (``clientapp``: another ClientApp
    object, ``module:attribute``, e.g. privnlu's wrapped with extra mods in a module of the app folder)."""
    check_address(superlink)
    settings = {k.replace("_", "-"): v for k, v in cfg.to_run_config().items()}
    settings.update({"out": str(out.resolve()), "resume": resume, "record-wire": record_wire, "round-timeout": round_timeout})
    lines = [
        "# Written by `privnlu federated --deploy`: a Flower app running privnlu's ServerApp/ClientApp.",
        "[build-system]", 'requires = ["hatchling"]', 'build-backend = "hatchling.build"', "",
        "[project]", 'name = "privnlu-federated"', 'version = "1.0.0"',
        'description = "Federated TextHide (privnlu) on Flower"', 'license = "Apache-2.0"', "",
        "[tool.flwr.app]", 'publisher = "privnlu"', "",
        "[tool.flwr.app.components]", 'serverapp = "privnlu.federated.app:server_app"',
        'clientapp = ' + _toml_value(clientapp), "",
        "[tool.flwr.app.config]", *[f"{k} = {_toml_value(v)}" for k, v in settings.items()], "",
    ]
    write_text_atomic(app_dir / "pyproject.toml", "\n".join(lines))
    home = app_dir / ".flwr"
    write_text_atomic(home / "config.toml", "\n".join([
        "[superlink]", f'default = "{CONNECTION}"', "", f"[superlink.{CONNECTION}]",
        f'address = "{superlink}"', f"insecure = {'true' if insecure else 'false'}", "",
    ]))
    return app_dir


def flwr_executable() -> str:
    exe = shutil.which("flwr") or str(Path(sys.executable).with_name("flwr"))
    if not Path(exe).exists():
        raise PrivnluError("Flower's `flwr` command was not found; install flwr[simulation]")
    return exe


def deploy(cfg: FederatedConfig, *, out: Path, superlink: str, app_dir: Path | None, resume: bool, record_wire: int,
           round_timeout: float, clientapp: str = CLIENTAPP) -> int:
    """Submit the run to the SuperLink with ``flwr run`` and stream its log; results land in ``out`` on the server.
    A SuperLink that does not answer is refused before the app is written (:func:`check_reachable`)."""
    check_reachable(superlink)
    app = write_app(app_dir or out / "flower_app", cfg, superlink=superlink, out=out, resume=resume,
                    record_wire=record_wire, round_timeout=round_timeout, clientapp=clientapp)
    env = {**os.environ, "FLWR_HOME": str((app / ".flwr").resolve())}
    cmd = [flwr_executable(), "run", str(app), CONNECTION, "--stream"]
    sys.stderr.write("privnlu federated --deploy: " + " ".join(cmd) + "\n")
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode != 0:
        raise PrivnluError(f"`flwr run` failed (exit {proc.returncode}); is a SuperLink listening on {superlink}?")
    return 0
