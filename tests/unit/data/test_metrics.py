"""GLUE metrics on hand-made predictions."""

import pytest

from privnlu.data.metrics import compute


def test_accuracy_f1_mcc_pearson():
    assert compute("accuracy", [1, 0, 1, 1], [1, 0, 0, 1])["accuracy"] == 0.75
    r = compute("f1_accuracy", [1, 1, 0, 0], [1, 0, 0, 1])
    assert r["f1"] == pytest.approx(0.5) and r["accuracy"] == 0.5 and r["score"] == pytest.approx(50.0)
    assert compute("matthews", [1, 0, 1, 0], [1, 0, 1, 0])["mcc"] == pytest.approx(1.0)
    assert compute("matthews", [1, 1, 1, 1], [1, 0, 1, 0])["mcc"] == 0.0
    r = compute("pearson_spearman", [1.0, 2.0, 3.0], [2.0, 4.0, 6.5])
    assert r["spearman"] == pytest.approx(1.0) and 0.99 < r["pearson"] < 1.0
    assert compute("pearson_spearman", [1.0, 1.0], [0.0, 1.0])["pearson"] == 0.0


def test_majority_predicts_the_most_frequent_train_label_on_dev():
    from privnlu.data.metrics import majority

    m = majority("f1_accuracy", [1, 1, 0], [1, 0, 0, 1])  # always 1: accuracy 50, F1 of class 1 = 2/3
    assert m["accuracy"] == pytest.approx(50.0) and m["score"] == pytest.approx(100 * 2 / 3)
    assert majority("matthews", [0, 0, 1], [0, 1])["score"] == 0.0  # a constant has MCC 0
    reg = majority("pearson_spearman", [1.0, 3.0], [0.5, 2.5], regression=True)
    assert "accuracy" not in reg


def test_majority_counts_tensor_labels_by_value():
    """d_chi fine-tuning passes its labels as a tensor: the first label (0 here) is not the majority (1)."""
    import torch

    from privnlu.data.metrics import majority

    assert majority("accuracy", torch.tensor([0, 1, 1, 1]), torch.tensor([1, 1, 0]))["accuracy"] == pytest.approx(200 / 3)
    reg = majority("pearson_spearman", torch.tensor([1.0, 3.0]), [0.5, 2.5], regression=True)
    assert "accuracy" not in reg
