"""A privnlu model folder and transformers: the encoder loads with ``AutoModel`` from ``encoder/``, and
``AutoModelForSequenceClassification`` / ``pipeline("text-classification")`` refuse the folder with a message
naming privnlu's loader instead of attaching a randomly initialised classifier."""

from __future__ import annotations

import json

import pytest


from privnlu.models.saving import LOADER


@pytest.fixture(scope="module")
def runs(joint_and_frozen_runs):
    return joint_and_frozen_runs


@pytest.mark.parametrize("mode", ["joint", "frozen"])
def test_transformers_refuses_a_privnlu_folder_naming_the_loader(runs, mode):
    from transformers import AutoModelForSequenceClassification, pipeline

    folder = runs / mode / "model"
    cfg = json.loads((folder / "config.json").read_text())
    assert LOADER in cfg["model_type"] and LOADER == "privnlu.predict.load"
    with pytest.raises(ValueError, match=r"privnlu\.predict\.load"):
        AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True)
    with pytest.raises(ValueError, match=r"privnlu\.predict\.load"):
        pipeline("text-classification", model=str(folder))


def test_the_joint_encoder_loads_from_its_subfolder_and_privnlu_predicts(runs):
    from transformers import AutoModel, AutoTokenizer

    from privnlu.model_folder.predict import load

    enc = runs / "joint" / "model" / "encoder"
    net = AutoModel.from_pretrained(str(enc), local_files_only=True)
    assert net.config.hidden_size == 32 and AutoTokenizer.from_pretrained(str(enc))("a film")["input_ids"][0] == 101
    row = load(runs / "joint" / "model").predict(["a fine good film"])[0]
    assert row["prediction"] in ("0", "1") and 0.5 <= row["probability"] <= 1


def test_the_card_tells_a_transformers_user_what_to_do(runs):
    card = (runs / "joint" / "model" / "README.md").read_text()
    assert "AutoModelForSequenceClassification" in card and LOADER in card and "`encoder/`" in card
