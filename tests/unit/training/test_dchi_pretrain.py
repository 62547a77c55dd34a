"""Privacy-adaptive MLM pretraining (Qu et al. 2021, section 3.4): objectives, tied head, frozen user side, resume."""

from __future__ import annotations

import json
import math

import pytest
import torch

from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.rng import SecretGenerator
from privnlu.training import mlm

# hand-made example: V = 4, softmax(logits) = (0.1, 0.2, 0.3, 0.4)
LOGITS = torch.log(torch.tensor([[0.1, 0.2, 0.3, 0.4]]))
ORIGINAL = torch.tensor([3])
PERTURBED = torch.tensor([1])
DRAWS = torch.tensor([[1, 1, 1, 1, 1, 2, 2, 2, 3, 3]])  # 10 perturbations -> (0, .5, .3, .2)


@pytest.mark.parametrize("objective,expected", [
    ("denoising", -math.log(0.4)),
    ("vanilla", -math.log(0.2)),
    ("probability", -(0.5 * math.log(0.2) + 0.3 * math.log(0.3) + 0.2 * math.log(0.4))),
])
def test_objective_loss_on_hand_made_example(objective, expected):
    targets = mlm.mlm_targets(objective, ORIGINAL, PERTURBED, DRAWS, 4)
    assert float(mlm.mlm_loss(LOGITS, targets)) == pytest.approx(expected, rel=1e-6)


def test_probability_targets_are_the_empirical_distribution():
    t = mlm.mlm_targets("probability", ORIGINAL, PERTURBED, DRAWS, 4)
    assert torch.allclose(t, torch.tensor([[0.0, 0.5, 0.3, 0.2]]))
    with pytest.raises(PrivnluError, match="unknown objective"):
        mlm.mlm_targets("bogus", ORIGINAL, PERTURBED, DRAWS, 4)


@pytest.fixture(scope="module")
def space(tiny_model):
    from privnlu.mechanisms.dchi import load_token_space

    return load_token_space(tiny_model)


def _ids(tok, texts):
    from privnlu.models.padding import pad

    return pad([torch.tensor(x) for x in tok(texts)["input_ids"]], tok.pad_token_id)


@pytest.mark.parametrize("mechanism", ["text", "rep"])
@pytest.mark.parametrize("objective", mlm.OBJECTIVES)
def test_make_batch(space, objective, mechanism):
    sp, tok = space
    ids, mask = _ids(tok, ["the cat sat on the mat today", "a short one", "it rained all day long in london"])
    kw = dict(objective=objective, mechanism=mechanism, mask_prob=0.3, draws=10, mask_id=tok.mask_token_id)
    b = mlm.make_batch(sp, ids, mask, eta=40.0, rng=SecretGenerator(0, warn=False),
                       generator=torch.Generator().manual_seed(0), **kw)
    assert b.masked.any(1).all()  # every row has a masked token
    assert not (b.masked & sp.special[ids]).any() and not (b.masked & ~mask.bool()).any()
    assert torch.equal(b.original, ids[b.masked])
    assert torch.allclose(b.targets.sum(1), torch.ones(len(b.original)))
    if mechanism == "text":
        assert (b.input_ids[b.masked] == tok.mask_token_id).all()
        assert torch.equal(b.input_ids[sp.special[ids]], ids[sp.special[ids]])
    else:
        assert torch.equal(b.inputs_embeds[b.masked], sp.embeddings[tok.mask_token_id].expand(int(b.masked.sum()), -1))
    if objective == "denoising":
        assert torch.equal(b.targets.argmax(1), b.original)
    if objective == "probability":
        assert ((b.targets * 10) - (b.targets * 10).round()).abs().max() < 1e-5
    # at a huge eta the privatized token is the original, so every objective targets it
    b = mlm.make_batch(sp, ids, mask, eta=1e7, rng=SecretGenerator(0, warn=False),
                       generator=torch.Generator().manual_seed(0), **kw)
    assert torch.equal(b.targets, torch.nn.functional.one_hot(b.original, sp.vocab_size).float())


def test_vanilla_targets_follow_the_noise(space):
    sp, tok = space
    ids, mask = _ids(tok, ["the cat sat on the mat today and then it went home"] * 4)
    b = mlm.make_batch(sp, ids, mask, objective="vanilla", mechanism="text", eta=5.0, rng=SecretGenerator(0, warn=False),
                       generator=torch.Generator().manual_seed(0), mask_prob=0.5, draws=10, mask_id=tok.mask_token_id)
    assert (b.targets.argmax(1) != b.original).float().mean() > 0.5  # heavy noise: mostly other tokens


def test_tied_head_shares_the_table():
    emb = torch.nn.Embedding(7, 3)
    head = mlm.TiedMLMHead(emb, hidden=5)
    assert not any(k.startswith("_table") or "weight" == k for k in head.state_dict())
    assert all(p is not emb.weight for p in head.parameters())
    h = torch.randn(2, 5)
    before = head(h)
    with torch.no_grad():
        emb.weight[2] += torch.tensor([1.0, -2.0, 0.5])  # not constant: LN output sums to 0
    after = head(h)
    assert after.shape == (2, 7) and torch.allclose(before[:, [0, 1, 3]], after[:, [0, 1, 3]])
    assert not torch.allclose(before[:, 2], after[:, 2])


class _RunsCode:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))


def test_head_file_is_safetensors_and_a_shared_pickle_never_runs(tmp_path, monkeypatch):
    from privnlu.io import is_pickle

    monkeypatch.chdir(tmp_path)
    head = mlm.TiedMLMHead(torch.nn.Embedding(7, 3), hidden=5)
    path = mlm.save_mlm_head(head, tmp_path / mlm.HEAD_FILE)
    assert not is_pickle(path)
    got = mlm.load_mlm_head(path)
    assert set(got) == set(head.state_dict()) and all(torch.equal(got[k], v) for k, v in head.state_dict().items())
    old = tmp_path / "mlm_head.pt"  # an older privnlu's head: read without running anything
    torch.save({"head": head.state_dict()}, old)
    assert torch.equal(mlm.load_mlm_head(old)["bias"], head.state_dict()["bias"])
    evil = tmp_path / "evil.pt"
    torch.save({"head": _RunsCode()}, evil)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a head")
    for bad in (evil, junk):
        with pytest.raises(PrivnluError, match="is not an MLM head"):
            mlm.load_mlm_head(bad)
    assert not (tmp_path / "PWNED").exists()


CORPUS = [f"sentence number {i} is about {w} and the {w} is here" for i, w in
          enumerate(["cats", "dogs", "rain", "music", "maths", "trains", "cities", "rivers"] * 6)]


def _config(**kw) -> mlm.PretrainConfig:
    return mlm.PretrainConfig(**{"objective": "probability", "eta": 30.0, "steps": 4, "warmup_steps": 2,
                                 "batch_size": 4, "max_length": 16, "checkpoint_every": 2, "eval_size": 8,
                                 "draws": 4, "head_lr": 1e-2, "lr": 1e-3, "seed": 0, **kw})


def _states(p: mlm.Pretrainer) -> dict[str, torch.Tensor]:
    return {**{f"m.{k}": v for k, v in p.model.state_dict().items()}, **{f"h.{k}": v for k, v in p.head.state_dict().items()}}


def test_resume_equals_uninterrupted_and_user_side_frozen(tiny_model, tmp_path):
    full = mlm.Pretrainer(_config(), tmp_path / "full", model=tiny_model, texts=CORPUS)
    table = full.model.get_input_embeddings().weight.detach().clone()
    start = {k: v.clone() for k, v in _states(full).items()}
    rec = full.run()
    assert rec["finished"] and rec["steps_done"] == {"warmup": 2, "adapt": 4}
    after = _states(full)
    assert torch.equal(full.model.get_input_embeddings().weight, table)  # stop-gradient on the user side
    assert not torch.equal(after["m.encoder.layer.0.attention.self.query.weight"], start["m.encoder.layer.0.attention.self.query.weight"])
    assert not torch.equal(after["h.dense.weight"], start["h.dense.weight"])
    assert (tmp_path / "full" / "encoder" / "config.json").is_file()
    assert json.loads((tmp_path / "full" / "pretrain.json").read_text())["kind"] == "dchi_pretrain"

    cut = tmp_path / "cut"
    part = mlm.Pretrainer(_config(), cut, model=tiny_model, texts=CORPUS).run(stop_after=3)  # inside the adapt phase
    assert not part["finished"]
    with pytest.raises(PrivnluError, match="--resume"):
        mlm.Pretrainer(_config(), cut, model=tiny_model, texts=CORPUS).run()
    again = mlm.Pretrainer(_config(), cut, model=tiny_model, texts=CORPUS)
    rec2 = again.run(resume=True)
    assert rec2["evals"] == rec["evals"]
    resumed = _states(again)
    assert all(torch.equal(resumed[k], after[k]) for k in after), [k for k in after if not torch.equal(resumed[k], after[k])]
    with pytest.raises(PrivnluError, match="other settings"):
        mlm.Pretrainer(_config(steps=5), cut, model=tiny_model, texts=CORPUS).run(resume=True)


def _cli(args, capsys):
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def test_cli_pretrain_and_bad_input(tiny_model, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n")
    base = ["dchi", "pretrain", "--model", str(tiny_model), "--corpus", str(corpus), "--batch-size", "4",
            "--max-length", "16", "--eval-size", "8", "--checkpoint-every", "2", "--seed", "0"]
    out = tmp_path / "pt"
    code, err = _cli(base + ["--objective", "denoising", "--eta", "30", "--steps", "2", "--warmup-steps", "2",
                             "--out", str(out)], capsys)
    assert code == 0, err
    assert (out / "encoder" / "config.json").is_file() and (out / "mlm_head_warm.safetensors").is_file()
    code, err = _cli(base + ["--objective", "vanilla", "--eta", "30", "--steps", "2", "--init-head",
                             str(out / "mlm_head_warm.safetensors"), "--out", str(tmp_path / "v")], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "v" / "pretrain.json").read_text())["steps_done"]["warmup"] == 0
    # continue from the first run's encoder and head (more steps, another seed)
    base_model = base[:2] + base[4:]  # without --model
    code, err = _cli(base_model + ["--model", str(out / "encoder"), "--init-head", str(out / "mlm_head.safetensors"),
                                   "--objective", "denoising", "--eta", "30", "--steps", "2", "--out", str(tmp_path / "c")],
                     capsys)
    assert code == 0, err
    from privnlu.report import markdown_report

    md = markdown_report([out / "pretrain.json", tmp_path / "v" / "pretrain.json", tmp_path / "c" / "pretrain.json"])
    tiny = tiny_model.name if hasattr(tiny_model, "name") else str(tiny_model).rstrip("/").rsplit("/", 1)[-1]
    prec = "bfloat16" if json.loads((out / "pretrain.json").read_text())["bf16"] else "float32"  # this CPU's
    assert f"| denoising | 30 | text | {tiny} | {prec} | 2 | 2 |" in md
    assert f"| vanilla | 30 | text | {tiny} | {prec} | 0 | 2 |" in md
    assert f"| denoising | 30 | text | pt | {prec} | 0 | 2 |" in md
    for extra, msg in [
        (["--objective", "denoising", "--eta", "0"], "eta"),
        (["--objective", "denoising", "--eta", "-5"], "eta"),
        (["--objective", "mystery", "--eta", "30"], "invalid choice: 'mystery'"),
        (["--objective", "vanilla", "--eta", "30", "--scheme", "sound"], "invalid choice"),
        (["--objective", "vanilla", "--eta", "30", "--init-head", str(tmp_path / "none.pt")], "no such file"),
        (["--objective", "vanilla", "--eta", "30", "--init-head", str(corpus)], "is not an MLM head"),
        (["--objective", "vanilla", "--eta", "30", "--mask-prob", "1.5"], "--mask-prob: '1.5' is out of range"),
    ]:
        code, err = _cli(base + extra + ["--out", str(tmp_path / "bad")], capsys)
        assert code == 2 and msg in err and "Traceback" not in err, (extra, err)
        assert len(err.strip().splitlines()) <= 2  # the --seed warning line may precede the error
        assert not (tmp_path / "bad" / "pretrain.json").exists()
