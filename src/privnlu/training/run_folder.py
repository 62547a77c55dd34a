"""A train run's folder: what it holds, and the check that an earlier run is not replaced by accident.

Kept free of torch and the engine so that ``privnlu train`` refuses a folder that holds a run before it loads any
library, data or encoder.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PrivnluError

#: the subfolder of a train run that holds its model in the Hugging Face layout (model_folder.export)
MODEL_DIR = "model"
#: the files of a run folder; a folder holding any of them holds a run
RUN_FILES = ("result.json", "checkpoint.json", "checkpoint.safetensors", "checkpoint.pt", "key.pt", MODEL_DIR)


def check_run_dir(run_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to replace an earlier run (its result, checkpoint and key) unless ``resume`` or ``overwrite`` says so."""
    found = [f for f in RUN_FILES if (run_dir / f).exists()]
    if resume:  # an older pickle checkpoint is refused before any work, never opened
        from ..models.checkpoint import refuse_legacy

        refuse_legacy(run_dir / "checkpoint.pt")
    if resume and overwrite:
        raise PrivnluError("--resume continues the run in the folder, --force replaces it: give one of them")
    if found and not (resume or overwrite):
        raise PrivnluError(f"{run_dir} already holds a run ({', '.join(found)}): continue it with --resume, replace it "
                           "(key file included) with --force, or choose another --out")


__all__ = ["MODEL_DIR", "RUN_FILES", "check_run_dir"]
