"""Files from another party are validated before any work (privnlu.schemas): every forged payload, wire capture
and result record makes the command exit 2 with one line naming the file and the field, and write nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.federated.wire import FORMAT, WireLog, load_capture
from privnlu.mechanisms.release import SharedPayload
from privnlu.schemas import check_payload, check_record, display_name, path_ref, shareable

N_EXAMPLES, EPOCHS, DIM = 6, 2, 8


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run_refused(capsys, tmp_path: Path, argv: list[str], file: Path, field: str) -> str:
    """Run the command; it must exit 2 with one line naming ``file`` and ``field``, and leave no file behind."""
    capsys.readouterr()
    before = listing(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(file) in err and f"field '{field}'" in err, err
    assert listing(tmp_path) == before, "a file was written"
    return err


# -- shared encoding files (attack --payload) -------------------------------------------------------------------

def good_payload() -> tuple[torch.Tensor, torch.Tensor, dict]:
    g = torch.Generator().manual_seed(0)
    n = N_EXAMPLES * EPOCHS
    x = torch.randn(n, DIM, generator=g)
    y = torch.nn.functional.one_hot(torch.arange(n) % 2, 2).float()
    meta = {"m": "4", "k": 2, "inter": False, "epochs": EPOCHS, "n_examples": N_EXAMPLES, "order": "shuffled",
            "task": "sst2", "split": "train", "label_names": ["negative", "positive"], "encoder": "bert",
            "scheme": "texthide", "data": "named task"}
    return x, y, meta


def _nan_first(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[0] = math.nan
    return t


PAYLOAD_CASES = {  # name: (change to (x, y, meta), the field the error names)
    "k as a string": (lambda x, y, m: (x, y, {**m, "k": "2"}), "k"),
    "k null": (lambda x, y, m: (x, y, {**m, "k": None}), "k"),
    "k 4.5": (lambda x, y, m: (x, y, {**m, "k": 4.5}), "k"),
    "k zero": (lambda x, y, m: (x, y, {**m, "k": 0}), "k"),
    "m null": (lambda x, y, m: (x, y, {**m, "m": None}), "m"),
    "m an object": (lambda x, y, m: (x, y, {**m, "m": {"a": 1}}), "m"),
    "task a list": (lambda x, y, m: (x, y, {**m, "task": ["sst2"]}), "task"),
    "task a path": (lambda x, y, m: (x, y, {**m, "task": "../sst2"}), "task"),
    "inter a string": (lambda x, y, m: (x, y, {**m, "inter": "no"}), "inter"),
    "labels 1-d": (lambda x, y, m: (x, y.argmax(1).float(), m), "y"),
    "labels 7 wide for 2 classes": (lambda x, y, m: (x, torch.zeros(len(x), 7), m), "y"),
    "NaN labels": (lambda x, y, m: (x, _nan_first(y), m), "y"),
    "NaN encodings": (lambda x, y, m: (_nan_first(x), y, m), "x"),
    "encodings 3-d": (lambda x, y, m: (x.reshape(len(x), 2, DIM // 2), y, m), "x"),
    "rows against the metadata": (lambda x, y, m: (x, y, {**m, "n_examples": N_EXAMPLES + 1}), "n_examples"),
}


@pytest.mark.parametrize("case", sorted(PAYLOAD_CASES))
def test_a_forged_payload_is_refused_before_any_work(case, tmp_path, capsys):
    change, field = PAYLOAD_CASES[case]
    x, y, meta = change(*good_payload())
    path = tmp_path / "shared.safetensors"
    SharedPayload(x, y, meta).save(path)
    run_refused(capsys, tmp_path, ["attack", "search", "--payload", str(path), "--out", str(tmp_path / "out.json")],
                path, field)


def test_a_good_payload_passes_and_the_check_can_fail(tmp_path):
    x, y, meta = good_payload()
    path = SharedPayload(x, y, meta).save(tmp_path / "shared.safetensors")
    back = SharedPayload.load(path)
    assert back.meta == meta and torch.equal(back.x, x)
    meta2 = {**meta, "newer_field": {"kept": True}}  # a newer writer's extra field is kept, not refused
    assert check_payload(meta2, x, y, file="f").model_extra == {"newer_field": {"kept": True}}
    with pytest.raises(PrivnluError, match=r"^f: field 'k': must be an integer >= 1$"):
        check_payload({**meta, "k": True}, x, y, file="f")


# -- wire captures (attack gradient --wire) ---------------------------------------------------------------------

def good_capture() -> tuple[dict, dict]:
    """(header entries, arrays by tensor name) of a one-round FedSGD capture of a 8 -> 4 -> 2 head."""
    rng = np.random.default_rng(0)
    model = {"head.net.0.weight": rng.normal(size=(4, DIM)).astype(np.float32),
             "head.net.0.bias": np.zeros(4, np.float32),
             "head.net.2.weight": rng.normal(size=(2, 4)).astype(np.float32),
             "head.net.2.bias": np.zeros(2, np.float32)}
    grads = {n: rng.normal(size=a.shape).astype(np.float32) for n, a in model.items()}
    sent = {"round": 1, "node_id": 101, "type": "train", "arrays": {"arrays": list(model)}, "metrics": {},
            "configs": {"config": {"server-round": 1}}}
    got = {"round": 1, "node_id": 101, "type": "train", "arrays": {"gradients": list(grads)},
           "metrics": {"metrics": {"num-examples": 1}}, "configs": {}}
    tensors = {**{f"sent/0/arrays/{n}": a for n, a in model.items()},
               **{f"received/0/gradients/{n}": a for n, a in grads.items()}}
    return {"sent": [sent], "received": [got]}, tensors


def write_capture(path: Path, entries: dict, tensors: dict) -> Path:
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata={"format": FORMAT, "entries": json.dumps(entries)})
    return path


def _received(change):
    def forge(entries: dict, tensors: dict) -> tuple[dict, dict]:
        e = dict(entries["received"][0])
        change(e)
        return {**entries, "received": [e]}, tensors
    return forge


def _tensor(name: str, value) -> callable:
    def forge(entries: dict, tensors: dict) -> tuple[dict, dict]:
        return entries, {**tensors, name: value(tensors[name])}
    return forge


GRAD = "received/0/gradients/head.net.0.weight"
WIRE_CASES = {
    "an entry without a round": (_received(lambda e: e.pop("round")), "received[0].round"),
    "a round as a string": (_received(lambda e: e.update(round="1")), "received[0].round"),
    "a node id that is not a number": (_received(lambda e: e.update(node_id="client-1")), "received[0].node_id"),
    "a negative node id": (_received(lambda e: e.update(node_id=-4)), "received[0].node_id"),
    "array names not a list": (_received(lambda e: e.update(arrays={"gradients": "head"})), "received[0].arrays"),
    "entries not a list": (lambda en, t: ({**en, "sent": {"0": en["sent"][0]}}, t), "sent"),
    "a gradient of the wrong shape": (_tensor(GRAD, lambda a: np.zeros((5, DIM), np.float32)),
                                      "received[0].arrays.gradients.head.net.0.weight"),
    "NaN gradients": (_tensor(GRAD, lambda a: np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a)
                               .astype(np.float32)), "received[0].arrays.gradients.head.net.0.weight"),
}


@pytest.mark.parametrize("case", sorted(WIRE_CASES))
def test_a_forged_wire_capture_is_refused_before_any_work(case, tmp_path, capsys):
    forge, field = WIRE_CASES[case]
    path = write_capture(tmp_path / "wire.safetensors", *forge(*good_capture()))
    run_refused(capsys, tmp_path, ["attack", "gradient", "--wire", str(path), "--out", str(tmp_path / "out.json")],
                path, field)


def test_a_good_capture_loads_and_round_trips(tmp_path):
    entries, tensors = good_capture()
    log = load_capture(write_capture(tmp_path / "w.safetensors", entries, tensors))
    assert log.received[0]["node_id"] == 101
    np.testing.assert_array_equal(log.received[0]["arrays"]["gradients"]["head.net.0.weight"], tensors[GRAD])
    again = load_capture(log.save(tmp_path / "again.safetensors"))  # what WireLog.save writes passes too
    assert again.sent[0]["configs"] == {"config": {"server-round": 1}}
    assert again.received[0]["arrays"]["gradients"].keys() == log.received[0]["arrays"]["gradients"].keys()
    pulled = WireLog(0, [], [{"round": -1, "node_id": 7, "type": "train", "error": "timeout"}])
    assert load_capture(pulled.save(tmp_path / "pulled.safetensors")).received[0]["round"] == -1


# -- result records (privnlu report) ----------------------------------------------------------------------------

GOOD_RECORD = {"kind": "train", "task": "sst2", "label": "sst2-none", "variant": "none", "scheme": "none", "m": "0",
               "k": 1, "inter": False, "mode": "frozen", "metric": "accuracy", "score": 80.0, "best_score": 81.0,
               "n_train": 40, "history": [], "spec": {"train": {}}}

RECORD_CASES = {
    "a task with a slash": ({"task": "../../escape"}, "task"),
    "a task as a list": ({"task": ["sst2"]}, "task"),
    "a kind with a slash": ({"kind": "train/x"}, "kind"),
    "a score as text": ({"score": "eighty"}, "score"),
    "a score NaN": ({"score": math.nan}, "score"),
    "k 4.5": ({"k": 4.5}, "k"),
    "m an object": ({"m": {"x": 1}}, "m"),
    "inter as text": ({"inter": "yes"}, "inter"),
    "history not a list": ({"history": {"0": 1}}, "history"),
    "a mode with markup": ({"mode": "<b>frozen</b>"}, "mode"),
}


@pytest.mark.parametrize("case", sorted(RECORD_CASES))
def test_a_forged_result_record_is_refused_before_any_work(case, tmp_path, capsys):
    change, field = RECORD_CASES[case]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD_RECORD))
    bad = tmp_path / "forged.json"
    bad.write_text(json.dumps({**GOOD_RECORD, **change}))
    run_refused(capsys, tmp_path, ["report", str(good), str(bad), "--out", str(tmp_path / "report")], bad, field)


def test_every_committed_record_passes_the_record_schema():
    root = Path(__file__).resolve().parents[2] / "results"
    n = 0
    for f in sorted(root.rglob("*.json")):
        rec = json.loads(f.read_text(encoding="utf-8"))
        for r in rec if isinstance(rec, list) else [rec]:
            if isinstance(r, dict) and "kind" in r:
                check_record(r, file=f)
                n += 1
    assert n > 100


# -- portable paths ---------------------------------------------------------------------------------------------

def test_paths_are_written_relative_or_as_a_reference(tmp_path):
    model = tmp_path / "models" / "bert"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    run = tmp_path / "runs" / "r1"
    rec = shareable({"spec": {"model": str(model), "public": "wiki", "data_dir": None}, "note": str(model)}, run)
    assert rec["spec"] == {"model": "../../models/bert", "public": "wiki", "data_dir": None}
    assert rec["note"] == str(model)  # only path fields are rewritten, never free text
    ref = path_ref(model)  # no folder in common: a name and the content fingerprint
    assert ref["name"] == "bert" and len(ref["sha256"]) == 16
    assert path_ref(model, "/") != str(model) and shareable({"model": str(model)}, None)["model"] == ref
    assert display_name(ref) == "bert" and display_name("/home/someone/x.safetensors") == "x.safetensors"
