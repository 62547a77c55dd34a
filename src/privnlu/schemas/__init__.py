"""Validated schemas of the files privnlu reads from other parties, and portable paths in the files it writes.

One schema per file kind (pydantic v2), checked before any work; the first problem is one line naming the file and
the field (``FILE: field 'k': must be an integer >= 1``):

* :mod:`.payload`: a shared encoding file's metadata and tensors (``privnlu encode`` -> ``attack --payload``);
* :mod:`.wire`: a wire capture's header and arrays (``federated --record-wire`` -> ``attack gradient --wire``);
* :mod:`.records`: the result records ``privnlu report`` reads.

:mod:`.paths` writes the local paths of a record portably. The tables of all three are in
``docs/design/file-formats.md``.
"""

from __future__ import annotations

from .base import FieldError, first_error, validate
from .paths import display_name, local_settings, path_ref, recorded_path, shareable
from .payload import PayloadMeta, check_payload
from .records import ResultRecord, check_record
from .wire import WireHeader, check_arrays, check_header

__all__ = ["FieldError", "PayloadMeta", "ResultRecord", "WireHeader", "check_arrays", "check_header",
           "check_payload", "check_record", "display_name", "first_error", "local_settings", "path_ref", "recorded_path", "shareable",
           "validate"]
