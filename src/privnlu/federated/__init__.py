"""Federated TextHide on Flower (TextHide Algorithm 2).

* :mod:`.config`: the run settings, carried as Flower's run config; pool split ``sum_c m_c = m``.
* :mod:`.client`: the ClientApp (own data shard, own mask pool, TextHide, gradient or local steps).
* :mod:`.strategy`: FedSGD (Algorithm 2) and FedAvg server strategies.
* :mod:`.server`: the ServerApp (central evaluation, checkpoints, resume, results record).
* :mod:`.wire`: a recording Grid, the eavesdropper's view of every message.
* :mod:`.simulation`: the in-process simulation; :mod:`.app` the apps for ``flwr run`` deployments;
  :mod:`.launch`: starting a run (``privnlu federated``).

The package imports only the settings (no Flower): the command line reads them to build its options.
"""

from .config import FederatedConfig, client_pool_sizes

__all__ = ["FederatedConfig", "client_pool_sizes"]
