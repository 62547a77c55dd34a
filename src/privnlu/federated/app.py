"""The Flower apps for a real deployment (``flwr run``), configured by the app's run config.

``privnlu federated --deploy`` writes a Flower app folder whose ``pyproject.toml``
points here::

    [tool.flwr.app.components]
    serverapp = "privnlu.federated.app:server_app"
    clientapp = "privnlu.federated.app:client_app"
"""

from .client import make_client_app
from .server import make_server_app

server_app = make_server_app()
client_app = make_client_app()
