"""privnlu: privacy-preserving natural-language understanding.

Data owners privatize text or its representations (:mod:`privnlu.mechanisms`),
model builders train on the privatized data (:mod:`privnlu.training`,
:mod:`privnlu.federated`), and auditors measure what leaks
(:mod:`privnlu.attacks`).
"""

import os as _os

# Nothing is ever fetched from a model hub at run time: every model is a local folder.
_os.environ["HF_HUB_OFFLINE"] = "1"
_os.environ["TRANSFORMERS_OFFLINE"] = "1"
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"
