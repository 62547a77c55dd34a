"""A data owner scores an attack on their own release: ``privnlu attack search|reconstruct --payload FILE --key
KEY.pt``. The attack answers exactly as without the key (it never sees it; the key is read only after the answers
exist), and the share of private sentences recovered is right where it is known, with its interval, chance line
and advantage over chance."""

from __future__ import annotations

import json

import pytest
import torch

from privnlu.attacks import owner_score
from privnlu.audit.leakage import on_scale
from privnlu.cli.main import main
from privnlu.errors import PrivnluError

N_PRIVATE = 20
RECONSTRUCT = ["--aux-size", "40", "--pairs", "2000", "--sim-releases", "1", "--methods", "clique,nmf", "--seed", "0"]


def _encode(tmp_path, tiny_model, toy_glue, *scheme: str, seed: int = 0) -> tuple[list[str], str, str]:
    base = ["--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(tmp_path / "c"), "--quiet"]
    enc, key = tmp_path / "enc.safetensors", tmp_path / "key.pt"
    assert main(["encode", "--task", "sst2", *base, "--train-limit", str(N_PRIVATE), *scheme, "--batch-size",
                 str(N_PRIVATE), "--seed", str(seed), "--out", str(enc), "--key-out", str(key)]) == 0
    return base, str(enc), str(key)


def _run(cmd: str, base: list[str], enc: str, out, *extra: str) -> dict:
    assert main(["attack", cmd, *base, "--payload", enc, "--out", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_search_without_mixing_recovers_every_private_sentence(capsys, tmp_path, tiny_model, toy_glue, monkeypatch):
    """m = 0, k = 1 releases the representations themselves: search names every private sentence; the key is read
    only after the search has answered."""
    base, enc, key = _encode(tmp_path, tiny_model, toy_glue, "--m", "0", "--k", "1", "--encodings-per-example", "2")
    capsys.readouterr()
    from privnlu.attacks.representation.search import SimilaritySearch
    from privnlu.mechanisms.release import KeyRecord

    events: list[str] = []
    real_run, real_load = SimilaritySearch.run, KeyRecord.load.__func__
    monkeypatch.setattr(SimilaritySearch, "run", lambda self, view: (events.append("attack"), real_run(self, view))[1])
    monkeypatch.setattr(KeyRecord, "load", classmethod(lambda cls, p: (events.append("key"), real_load(cls, p))[1]))
    rec = _run("search", base, enc, tmp_path / "s.json", "--key", key)
    assert events == ["attack", "key"]
    s = rec["owner_score"]
    assert (s["recovered"], s["private_sentences"], s["rate"], s["candidates"]) == (N_PRIVATE, N_PRIVATE, 100.0, 60)
    assert s["random_guess"] == pytest.approx(100 * (1 - (59 / 60) ** 2), abs=1e-3)  # two answers per sentence
    assert s["ci95"][0] > 80 and s["ci95"][1] == 100.0 and s["at_chance"] is False
    assert s["advantage"] == on_scale(s["rate"], s["ci95"], s["random_guess"])["advantage"] == 100.0
    err = capsys.readouterr().err
    assert f"search: {N_PRIVATE} of the {N_PRIVATE} private sentences were recovered" in err
    assert "advantage over chance 100.0" in err and "owner's key" in rec["note"]


def test_the_answers_are_the_same_with_and_without_the_key(capsys, tmp_path, tiny_model, toy_glue):
    base, enc, key = _encode(tmp_path, tiny_model, toy_glue, "--m", "4", "--k", "2", "--encodings-per-example", "4")
    plain = _run("search", base, enc, tmp_path / "s0.json")
    keyed = _run("search", base, enc, tmp_path / "s1.json", "--key", key)
    assert plain["answers"] == keyed["answers"] and "owner_score" not in plain
    assert "no ground truth" in plain["note"]
    s = keyed["owner_score"]
    assert 0 <= s["recovered"] <= N_PRIVATE and s["ci95"][0] <= s["rate"] <= s["ci95"][1]
    plain = _run("reconstruct", base, enc, tmp_path / "r0.json", *RECONSTRUCT)
    keyed = _run("reconstruct", base, enc, tmp_path / "r1.json", *RECONSTRUCT, "--key", key)
    for m in ("clique", "nmf"):
        assert plain["methods"][m]["answers"] == keyed["methods"][m]["answers"]
        s = keyed["methods"][m]["owner_score"]
        assert s["private_sentences"] == N_PRIVATE and 0 <= s["recovered"] <= N_PRIVATE
        assert s["advantage"] == on_scale(s["rate"], s["ci95"], s["random_guess"])["advantage"]
    assert "private sentences were recovered" in capsys.readouterr().err


def test_bad_keys_are_one_line_before_any_work(capsys, tmp_path, tiny_model, toy_glue):
    base, enc, key = _encode(tmp_path, tiny_model, toy_glue, "--m", "0", "--k", "1")
    text = tmp_path / "k.txt"
    text.write_text("not a key")
    out = tmp_path / "o.json"
    cases = [(["--payload", enc, "--key", str(tmp_path / "none.pt")], "no such file"),
             (["--payload", enc, "--key", str(text)], "not a privnlu key file"),
             (["--payload", enc, "--key", enc], "names the --payload file"),
             (["--task", "sst2", "--key", key], "give that release as --payload")]
    for cmd in ("search", "reconstruct"):
        for extra, match in cases:
            code = main(["attack", cmd, *base, *extra, "--out", str(out)])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and match in err[-1] and not out.exists(), (cmd, extra, err)
    code = main(["attack", "search", *base, "--payload", enc, "--key", key, "--out", key, "--force"])
    assert code == 2 and "--out must differ from --key" in capsys.readouterr().err
    (tmp_path / "other").mkdir()  # another release's key (other size) is refused once read
    _, _, other = _encode(tmp_path / "other", tiny_model, toy_glue, "--m", "0", "--k", "1", "--encodings-per-example", "3")
    code = main(["attack", "search", *base, "--payload", enc, "--key", other, "--out", str(out)])
    assert code == 2 and "not this file's key" in capsys.readouterr().err
    (tmp_path / "same").mkdir()  # the key of another release of the same shape does not reproduce this one
    _, _, same = _encode(tmp_path / "same", tiny_model, toy_glue, "--m", "0", "--k", "1", seed=1)
    code = main(["attack", "search", *base, "--payload", enc, "--key", same, "--out", str(out)])
    assert code == 2 and "does not reproduce the encodings" in capsys.readouterr().err


def test_score_counts_and_chance_by_hand():
    private = ["a", "b", "c", "d"]
    candidates = ["a", "b", "c", "d", "x", "y", "z", "b"]  # "b" twice
    answers = ["a", "x", "b", "a", "c"]
    truth = [[0], [1], [1, 2], [3], []]  # the last answer is about no private sentence
    s = owner_score.score(answers, truth, private, candidates, scale=on_scale)
    assert s["recovered"] == 2 and s["rate"] == 50.0  # "a" for 0, "b" for 1; "a" for 3 is wrong; "c" is about none
    chance = 100 * ((1 / 8) + (1 - (1 - 2 / 8) ** 2) + 1 / 8 + 1 / 8) / 4
    assert s["random_guess"] == pytest.approx(chance, abs=1e-3)
    assert s["advantage"] == pytest.approx(100 * (50 - chance) / (100 - chance), abs=0.01)
    assert s["private_in_candidates"] == 4
    assert owner_score.score(["q"], [[0]], ["q"], ["r"])["private_in_candidates"] == 0


def test_group_truth_is_the_majority_original():
    from privnlu.mechanisms.release import KeyRecord

    partners = torch.tensor([[0, 1], [0, 2], [1, 0], [3, 2]])
    key = KeyRecord(None, partners, torch.full((4, 2), 0.5), torch.zeros(4, 2, dtype=torch.bool), None,
                    torch.zeros(4, dtype=torch.long), "0", 2)
    assert owner_score.group_truth(key, [torch.tensor([0, 1, 2]), torch.tensor([3]), torch.tensor([], dtype=torch.long)]) \
        == [[0], [2], []]
    with pytest.raises(PrivnluError):
        owner_score.score(["a"], [], ["a"], ["a"])


def test_the_python_entry_scores_with_the_key(tmp_path, tiny_model, toy_glue, monkeypatch):
    import privnlu

    _, enc, key = _encode(tmp_path, tiny_model, toy_glue, "--m", "0", "--k", "1")
    monkeypatch.setenv("PRIVNLU_DATA", str(toy_glue))
    monkeypatch.setenv("PRIVNLU_CACHE", str(tmp_path / "cache"))
    plain = privnlu.attack("search", payload=enc, model=str(tiny_model))
    keyed = privnlu.attack("search", payload=enc, model=str(tiny_model), key=key)
    assert plain["answers"] == keyed["answers"] and "owner_score" not in plain
    s = keyed["owner_score"]
    assert s["recovered"] == N_PRIVATE and s["advantage"] == 100.0 and s["at_chance"] is False
