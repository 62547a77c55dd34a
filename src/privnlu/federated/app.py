"""The Flower apps for a real deployment (``flwr run``), configured by the app's run config.

``privnlu federated --deploy`` writes a Flower app folder whose ``pyproject.toml``
points here::

    [tool.flwr.app.components]
    serverapp = "privnlu.federated.app:server_app"
    clientapp = "privnlu.federated.app:client_app"

With ``secagg = true`` in the run config the ServerApp runs Flower's ``SecAggPlusWorkflow`` each round, and the
ClientApp answers it through ``secaggplus_mod``, which every privnlu ClientApp carries (:mod:`.secagg_plus`).
"""

from .client import make_client_app
from .server import make_server_app

server_app = make_server_app()
client_app = make_client_app()
