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
import subprocess
import sys
from pathlib import Path

from ..errors import PrivnluError
from ..io import write_text_atomic
from .config import FederatedConfig

CONNECTION = "privnlu"
CLIENTAPP = "privnlu.federated.app:client_app"


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
    """Submit the run to the SuperLink with ``flwr run`` and stream its log; results land in ``out`` on the server."""
    app = write_app(app_dir or out / "flower_app", cfg, superlink=superlink, out=out, resume=resume,
                    record_wire=record_wire, round_timeout=round_timeout, clientapp=clientapp)
    env = {**os.environ, "FLWR_HOME": str((app / ".flwr").resolve())}
    cmd = [flwr_executable(), "run", str(app), CONNECTION, "--stream"]
    sys.stderr.write("privnlu federated --deploy: " + " ".join(cmd) + "\n")
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode != 0:
        raise PrivnluError(f"`flwr run` failed (exit {proc.returncode}); is a SuperLink listening on {superlink}?")
    return 0
