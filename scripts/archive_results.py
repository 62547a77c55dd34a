"""Copy the finished result JSONs of the long runs into ``results/`` (committed), so that the docs' tables can be
regenerated on a fresh clone and a queue can resume in a later session (``scripts/restore_results.sh`` copies them
back into ``runs/``). A run's hidden scratch (its ``*.ckpt`` folders of model weights and mask pools, finished
selection candidates) is never copied. A result
records where its encoder was loaded from; a committed file must carry nothing of this machine, so the packaged
model's folder becomes its public name and any other absolute path is refused (tests/test_results_archive.py).

A committed record that differs from the run's copy is kept, and listed, unless ``--replace`` is given: a rerun
(not bit-reproducible under bf16) must not silently replace the record the docs quote.

    .venv/bin/python scripts/archive_results.py [--replace] [runs/i10 runs/i11 runs/i12/one.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("runs/i10", "runs/i11", "runs/dchi_t45", "runs/dchi_pt")
sys.path.insert(0, str(ROOT / "src"))
from privnlu.io import write_text_atomic  # noqa: E402
from privnlu.models.encoder import PACKAGED_MODEL_NAME as PACKAGED, default_model_path  # noqa: E402


def scrub(obj, model_dir: str, root: str):
    """``obj`` with the packaged model's folder replaced by its public name and paths under the checkout made
    relative; any other absolute path raises."""
    if isinstance(obj, dict):
        return {k: scrub(v, model_dir, root) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v, model_dir, root) for v in obj]
    if isinstance(obj, str):
        if obj == model_dir:
            return PACKAGED
        if obj.startswith(root + "/"):
            return obj[len(root) + 1:]
        if obj.startswith("/"):
            raise SystemExit(f"refusing to archive an absolute path: {obj}")
    return obj


def main(sources: list[str], *, replace: bool = False, root: Path = ROOT) -> list[Path]:
    """Copy the result records under ``sources`` (folders or single files, relative to ``root``) to ``results/``;
    returns the committed records kept because they differ (all replaced with ``replace``)."""
    model_dir = str(default_model_path())
    n, kept = 0, []
    for src in sources:
        path = root / src
        for f in sorted(path.rglob("*.json")) if path.is_dir() else [path] if path.suffix == ".json" else []:
            if any(part.startswith(".") for part in f.relative_to(root).parts):
                continue  # a run's scratch (candidates, checkpoints) is not a result
            if (f.parent / "model.safetensors").exists() or (f.parent / "config.json").exists():
                continue  # a saved model's folder (config, tokenizer, card): not a result
            rec = json.loads(f.read_text())
            if not isinstance(rec, dict) or "kind" not in rec:
                continue  # result records say what they are
            dst = root / "results" / f.relative_to(root / "runs")
            text = json.dumps(scrub(rec, model_dir, str(root)), indent=1) + "\n"
            old = dst.read_text() if dst.exists() else None
            if old is not None and old != text and not replace:
                kept.append(dst)
                continue
            if old != text:
                write_text_atomic(dst, text)
            n += 1
    print(f"results/: {n} files from {', '.join(sources)}")
    if kept:
        print(f"kept {len(kept)} committed records that differ from runs/ (--replace overwrites them):")
        print("\n".join(f"  {k.relative_to(root)}" for k in kept))
    return kept


if __name__ == "__main__":
    args = sys.argv[1:]
    main([a for a in args if a != "--replace"] or list(SOURCES), replace="--replace" in args)
