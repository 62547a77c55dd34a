"""The public API (``import privnlu``): one entry per role, the same engine as the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import privnlu
from privnlu.errors import PrivnluError

SRC = Path(__file__).resolve().parents[3] / "src"


def test_import_privnlu_is_light_and_names_one_entry_per_role():
    out = subprocess.run([sys.executable, "-c", "import sys, privnlu; print(sorted(privnlu.__all__), "
                          "'torch' in sys.modules)"], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(SRC)}).stdout
    assert out.strip() == "['__version__', 'attack', 'audit', 'predict', 'release', 'train'] False"
    with pytest.raises(AttributeError):
        privnlu.nothing_here  # noqa: B018


def test_train_release_attack_and_predict(tiny_model, toy_glue, tmp_path):
    common = dict(model=str(tiny_model), data_dir=str(toy_glue), cache_dir=str(tmp_path / "cache"))
    rec = privnlu.train("sst2", scheme="texthide", m=4, k=2, epochs=2, batch_size=8, seed=0, out=tmp_path / "run",
                        progress=False, **common)
    assert rec["scheme"] == "texthide" and rec["m"] == "4" and (tmp_path / "run" / "key.pt").is_file()
    rows = privnlu.predict(tmp_path / "run", ["a fine good film", "a bad dull film"])
    assert [set(r) for r in rows] == [{"text", "prediction", "label_id", "probability"}] * 2
    payload = privnlu.release("sst2", scheme="texthide", m=4, k=2, out=tmp_path / "enc.safetensors",
                              key_out=tmp_path / "key.pt", encodings=2, progress=False, **common)
    assert payload.x.shape[0] == 120 and payload.meta["scheme"] == "texthide"
    found = privnlu.attack("search", payload=tmp_path / "enc.safetensors", task="sst2", model=str(tiny_model))
    assert found["mode"] == "payload" and found["n_encodings"] == 120
    with pytest.raises(PrivnluError, match="unknown option"):
        privnlu.train("sst2", scheme="texthide", eta=5.0)


def test_the_same_scheme_by_name_or_object(tiny_model, toy_glue, tmp_path):
    from privnlu import schemes

    common = dict(model=str(tiny_model), data_dir=str(toy_glue), cache_dir=str(tmp_path / "c"), epochs=1,
                  batch_size=8, seed=3, progress=False)
    a = privnlu.train("sst2", scheme="dp-ie", epsilon=8, **common)
    b = privnlu.train("sst2", scheme=schemes.create("dp-ie", epsilon=8), **common)
    assert a["label"] == b["label"] == "sst2-dp-texthide-intra-m0-k4-gaussian-eps8-correct"
    assert a["dp"]["accounted_epsilon"] == b["dp"]["accounted_epsilon"] <= 8
