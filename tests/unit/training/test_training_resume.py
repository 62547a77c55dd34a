"""Interrupted runs resume from their last epoch: exactly, for a seeded run; recipes resume too."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from privnlu.data import get_task
from privnlu.mechanisms import TextHide
from privnlu.rng import SecretGenerator
from privnlu.training import TrainConfig, fit


class Interrupt(Exception):
    pass


def run(tmp: Path, *, stop_at_epoch: int | None = None, resume: bool = False) -> list[dict]:
    n, d = 64, 6
    g = torch.Generator().manual_seed(0)
    x, labels = torch.randn(n, d, generator=g), torch.randint(0, 2, (n,), generator=g)
    y = torch.nn.functional.one_hot(labels, 2).float()
    torch.manual_seed(0)  # head initialisation
    head = torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 2))
    hider = TextHide(4, 2, dim=d, rng=SecretGenerator(0, warn=False))
    calls = {"n": 0}

    def eval_sets():
        calls["n"] += 1
        if stop_at_epoch is not None and calls["n"] == stop_at_epoch:
            raise Interrupt  # after the checkpoint of the epoch before
        return {"dev": (x, labels)}

    state = fit(task=get_task("sst2"), head=head, represent=lambda idx: x[idx], targets=y, eval_sets=eval_sets,
                config=TrainConfig(epochs=3, batch_size=16, seed=0), hider=hider, checkpoint=tmp / "ckpt.pt",
                resume=resume, progress=False, lengths=torch.randint(1, 20, (n,), generator=g).tolist())
    return state.history


def test_seeded_run_resumes_exactly(tmp_path):
    full = run(tmp_path / "a")
    with pytest.raises(Interrupt):
        run(tmp_path / "b", stop_at_epoch=3)  # dies during epoch 3's evaluation; epochs 1-2 are checkpointed
    resumed = run(tmp_path / "b", resume=True)
    assert len(resumed) == 3
    strip = lambda h: [{k: v for k, v in e.items() if k != "seconds"} for e in h]
    assert strip(resumed) == strip(full)


def test_recipe_runs_resume_and_clean_up(tiny_model, toy_glue, monkeypatch):
    from privnlu.training.engine import RunSpec, prepare, train_run, with_scheme
    from privnlu.training import trainer

    spec = with_scheme(RunSpec(task="sst2", model=str(tiny_model), data_dir=str(toy_glue), mode="joint", max_length=16,
                               bf16="off", train=TrainConfig(epochs=2, batch_size=8, seed=0)), m=4, k=2)
    prep = prepare(spec, progress=False)
    out = toy_glue.parent / "runs" / "r.json"
    real_save = trainer._save

    def save_then_die(*a, **kw):
        real_save(*a, **kw)
        raise Interrupt

    monkeypatch.setattr(trainer, "_save", save_then_die)
    with pytest.raises(Interrupt):
        train_run(spec, prep, out=out, progress=False)
    scratch = out.parent / ".r.ckpt"
    assert (scratch / "checkpoint.safetensors").exists() and (scratch / "checkpoint.json").exists()
    assert (scratch / "key.pt").exists() and not out.exists()
    monkeypatch.setattr(trainer, "_save", real_save)
    rec = train_run(spec, prep, out=out, progress=False)
    assert out.exists() and not scratch.exists() and len(rec["history"]) == 2


def test_dchi_finetune_resumes_on_the_same_privatized_data(tiny_model, toy_glue, tmp_path):
    from privnlu.training import private_finetune as pf

    prep = pf.prepare("sst2", model=tiny_model, data_dir=str(toy_glue), max_length=16)
    config = pf.FinetuneConfig(mode="text", eta=50.0, epochs=3, batch_size=8, seed=0, bf16="off")
    payload_file = tmp_path / ".payload.pt"
    payloads = pf.load_or_privatize(prep, "text", 50.0, SecretGenerator(0, warn=False), payload_file)
    assert payload_file.stat().st_mode & 0o077 == 0  # written 0600
    again = pf.load_or_privatize(prep, "text", 50.0, SecretGenerator(1, warn=False), payload_file)
    assert all(torch.equal(a, b) for a, b in zip(payloads[0], again[0]))  # read back, never privatized twice
    full = pf.finetune(prep, config, payloads=payloads).record["history"]

    def die_in_epoch_2(msg: str) -> None:
        if "epoch 2" in msg:
            raise Interrupt

    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(Interrupt):
        pf.finetune(prep, config, payloads=payloads, log=die_in_epoch_2, checkpoint=ckpt)
    rec = pf.finetune(prep, config, payloads=payloads, checkpoint=ckpt).record
    resumed = rec["history"]
    assert rec["seconds"] >= sum(h["seconds"] for h in resumed)  # epoch 1, trained by the first call, counts
    strip = lambda h: [{k: v for k, v in e.items() if k != "seconds"} for e in h]
    assert strip(resumed) == strip(full)
    other = pf.FinetuneConfig(mode="text", eta=50.0, epochs=3, batch_size=4, seed=0, bf16="off")
    with pytest.raises(Exception, match="other settings"):
        pf.finetune(prep, other, payloads=payloads, checkpoint=ckpt)
