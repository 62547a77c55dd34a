"""Data: the task registry, GLUE readers, embedded corpora and generic loaders."""

from .dataset import TextDataset
from .generic import load_table
from .public import load_public_corpus
from .tasks import TASKS, TaskSpec, get_task, glue_data_available, register_task, resolve_data_dir

__all__ = [
    "TASKS", "TaskSpec", "TextDataset", "get_task", "glue_data_available", "load_public_corpus",
    "load_table", "register_task", "resolve_data_dir",
]
