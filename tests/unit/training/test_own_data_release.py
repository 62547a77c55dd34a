"""A user's own CSV/JSONL end to end: encode it, then attack it directly and through --payload.

Also: the shared file carries no local path and no epoch order, and `encode` checks --split before any work.
"""

import json

import pytest
import torch

from conftest import without_release_notice, write
from privnlu.cli.main import main
from privnlu.mechanisms.release import KeyRecord, SharedPayload
from privnlu.models.encoder import model_fingerprint


@pytest.fixture()
def own_files(tmp_path):
    rows = [(f"{'a fine good film' if i % 2 else 'a bad dull film'} number {i}", "pos" if i % 2 else "neg") for i in range(60)]
    train = write(tmp_path / "data" / "mine_train.csv", "text,label\n" + "".join(f"{t},{lab}\n" for t, lab in rows))
    dev = write(tmp_path / "data" / "mine_dev.jsonl", "".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows[:20]))
    return train, dev


def test_own_data_encode_and_attacks(capsys, tmp_path, tiny_model, own_files):
    train, dev = own_files
    files = ["--train-file", str(train), "--dev-file", str(dev)]
    common = ["--model", str(tiny_model), "--cache-dir", str(tmp_path / "c"), "--quiet"]
    enc, key = tmp_path / "enc.safetensors", tmp_path / "key.pt"
    assert main(["encode", "--task", "mine", *files, *common, "--scheme", "texthide", "--m", "4", "--k", "2", "--encodings-per-example", "4",
                 "--batch-size", "60", "--seed", "0", "--out", str(enc), "--key-out", str(key)]) == 0
    payload, rec = SharedPayload.load(enc), KeyRecord.load(key)
    # no path of the owner's machine, but the model's name and weight fingerprint
    assert str(tmp_path) not in json.dumps(payload.meta) and str(tmp_path) not in enc.read_bytes().decode("latin-1")
    assert payload.meta["encoder"] == tiny_model.name and payload.meta["encoder_fingerprint"] == model_fingerprint(tiny_model)
    assert payload.meta["task"] == "mine" and payload.meta["data"] == "own files" and payload.meta["order"] == "shuffled"
    # no epoch order: the 240 rows interleave the 4 epochs (sorted by epoch, each quarter would hold a single epoch)
    assert len(payload.x) == 240 and not bool((rec.epoch[1:] >= rec.epoch[:-1]).all())
    assert all(len(set(rec.epoch[q * 60:(q + 1) * 60].tolist())) == 4 for q in range(4))
    capsys.readouterr()

    # through --payload: the attacker brings the candidate sentences as its own files
    s_out, r_out = tmp_path / "s.json", tmp_path / "r.json"
    assert main(["attack", "search", *files, *common, "--payload", str(enc), "--no-sbert", "--out", str(s_out)]) == 0
    assert json.loads(s_out.read_text())["task"] == "mine"
    assert main(["attack", "reconstruct", *files, *common, "--payload", str(enc), "--aux-size", "60", "--pairs", "2000",
                 "--sim-releases", "1", "--methods", "nmf", "--out", str(r_out)]) == 0
    assert json.loads(r_out.read_text())["methods"]["nmf"]["groups"] == 60
    capsys.readouterr()
    code = main(["attack", "search", *common, "--payload", str(enc), "--out", str(tmp_path / "x.json")])
    err = without_release_notice(capsys.readouterr().err).strip().splitlines()
    assert code == 2 and "owner's own data" in err[-1] and "--train-file" in err[-1] and not (tmp_path / "x.json").exists()

    # directly, with no --task: the task is named after the file
    for attack, extra in (("search", ["--conditions", "baseline,1:2"]), ("invert", ["--conditions", "baseline", "--inv-epochs", "2",
                                                                                     "--hidden", "16"])):
        out = tmp_path / f"{attack}.json"
        assert main(["attack", attack, *files, *common, "--queries", "10", "--no-sbert", "--seed", "0", *extra,
                     "--out", str(out)]) == 0, attack
        assert json.loads(out.read_text())["task"] == "mine_train"


def test_encode_checks_split_before_any_work(capsys, tmp_path, tiny_model, own_files):
    train, dev = own_files
    cache = tmp_path / "c"
    code = main(["encode", "--task", "mine", "--train-file", str(train), "--dev-file", str(dev), "--model", str(tiny_model),
                 "--cache-dir", str(cache), "--quiet", "--split", "nosuch", "--out", str(tmp_path / "e"),
                 "--key-out", str(tmp_path / "k")])
    err = without_release_notice(capsys.readouterr().err).strip().splitlines()
    assert code == 2 and "unknown split 'nosuch'" in err[-1] and len(err) == 1
    assert not cache.exists() and not (tmp_path / "e").exists() and not (tmp_path / "k").exists()  # nothing encoded


@pytest.mark.parametrize("flag", ["--out", "--key-out"])
def test_encode_checks_output_paths_before_any_work(capsys, tmp_path, tiny_model, own_files, flag):
    train, dev = own_files
    blocker = write(tmp_path / "a_file", "x")
    paths = {"--out": str(tmp_path / "e"), "--key-out": str(tmp_path / "k"), flag: str(blocker / "sub" / "x")}
    code = main(["encode", "--task", "mine", "--train-file", str(train), "--dev-file", str(dev), "--model", str(tiny_model),
                 "--cache-dir", str(tmp_path / "c"), "--quiet", *[a for kv in paths.items() for a in kv]])
    err = without_release_notice(capsys.readouterr().err).strip().splitlines()
    assert code == 2 and f"{flag} " in err[-1] and "is a file, not a folder" in err[-1] and not (tmp_path / "c").exists()


def test_a_payload_whose_header_length_starts_with_0x80_is_not_taken_for_a_pickle(tmp_path):
    """Shared payloads and wire captures use one pickle check (io.is_pickle): a safetensors header length whose low
    byte is 0x80 (a pickle's first byte) is still a payload; a real pickle is refused."""
    import pytest

    from privnlu.errors import PrivnluError
    from privnlu.mechanisms.release import SharedPayload

    path = tmp_path / "p.safetensors"
    for pad in range(300):
        SharedPayload(torch.zeros(2, 3), torch.zeros(2, 2), {"note": "x" * pad}).save(path)
        if path.read_bytes()[0] == 0x80:
            break
    assert path.read_bytes()[0] == 0x80
    assert SharedPayload.load(path).meta["note"] == "x" * pad
    torch.save({"x": torch.zeros(1)}, tmp_path / "old.pt")
    with pytest.raises(PrivnluError, match="never unpickles"):
        SharedPayload.load(tmp_path / "old.pt")
