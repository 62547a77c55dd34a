"""Federated TextHide on Flower (TextHide Algorithm 2).

* :mod:`.config`: the run settings, carried as Flower's run config; pool split ``sum_c m_c = m``.
* :mod:`.client`: the ClientApp (own data shard, own mask pool, TextHide, gradient or local steps).
* :mod:`.strategy`: FedSGD (Algorithm 2) and FedAvg server strategies.
* :mod:`.server`: the ServerApp (central evaluation, checkpoints, resume, results record).
* :mod:`.wire`: a recording Grid, the eavesdropper's view of every message.
* :mod:`.simulation`: the in-process simulation; :mod:`.app` the apps for ``flwr run`` deployments.
"""

from .config import FederatedConfig, client_pool_sizes
from .strategy import FedAvgTextHide, TextHideFedSGD
from .wire import RecordingGrid, WireLog, load_capture

__all__ = ["FedAvgTextHide", "FederatedConfig", "RecordingGrid", "TextHideFedSGD", "WireLog", "client_pool_sizes",
           "load_capture"]
