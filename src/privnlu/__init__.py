"""privnlu: privacy-preserving natural-language understanding.

Data owners privatize text or its representations (:mod:`privnlu.owner`, under a scheme of
:mod:`privnlu.schemes`), model builders train on the privatized data (:mod:`privnlu.training`,
:mod:`privnlu.federated`) and apply the model folder (:mod:`privnlu.model_folder`), and auditors measure what leaks
(:mod:`privnlu.attacks`, :mod:`privnlu.audit`).
"""

import os as _os
import types as _types

from .version import __version__

# privnlu's packaged defaults are local folders, loaded with ``local_files_only=True``; importing privnlu does not
# switch hub access off for the rest of the process (see models.encoder.load_encoder).
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: one entry per role (privnlu.api), imported on first use so that ``import privnlu`` stays light
API = ("release", "train", "attack", "audit", "predict")


class _AuditPackage(_types.ModuleType):
    """``privnlu.audit`` is both the audit package and the API entry ``privnlu.audit(task, ...)``: the package is
    imported by any use of the entry (Python then binds the name to the package), so the package answers the call."""

    def __call__(self, *args, **kwargs):
        from .api import audit

        return audit(*args, **kwargs)


from . import audit as _audit_package  # noqa: E402 - the audit's settings only (no torch)

_audit_package.__class__ = _AuditPackage


def __getattr__(name: str):
    if name in API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'privnlu' has no attribute '{name}'")


__all__ = ["__version__", *API]
