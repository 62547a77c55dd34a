"""Feature extraction throughput (sentences/s) against a bare ``model(**batch)`` loop.

Same sentences (SST-2 dev, or tweets dev without GLUE), same batch size and max
length, same process. The bare loop pads each batch in file order; privnlu sorts
by length and pads per batch. Also measures bf16 autocast and its accuracy cost
(cosine similarity to the fp32 features).
"""

from __future__ import annotations

import time

import torch

from common import save
from privnlu.data import get_task, glue_data_available
from privnlu.models import extract_features, load_encoder

BATCH, MAXLEN = 64, 128


def bare_loop(enc, texts: list[str]) -> float:
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), BATCH):
            batch = enc.tokenizer(texts[i : i + BATCH], truncation=True, max_length=MAXLEN, padding=True, return_tensors="pt")
            enc.model(**batch)
    return time.perf_counter() - t0


def main() -> None:
    task = "sst2" if glue_data_available("sst2", "dev") else "tweets"
    texts = get_task(task).load("dev").texts_a
    enc = load_encoder()
    extract_features(enc, texts[:64], progress=False)  # warm-up
    t_bare = bare_loop(enc, texts)
    t0 = time.perf_counter()
    fp32 = extract_features(enc, texts, batch_size=BATCH, max_length=MAXLEN, progress=False)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    bf16 = extract_features(enc, texts, batch_size=BATCH, max_length=MAXLEN, bf16=True, progress=False)
    t_bf16 = time.perf_counter() - t0
    cos = torch.nn.functional.cosine_similarity(fp32, bf16)
    n = len(texts)
    save("feature_extraction", {
        "task": task, "sentences": n, "batch": BATCH, "max_length": MAXLEN,
        "bare_sent_per_s": n / t_bare, "privnlu_sent_per_s": n / t_ours, "privnlu_bf16_sent_per_s": n / t_bf16,
        "ratio_privnlu_to_bare": t_bare / t_ours, "ratio_bf16_to_bare": t_bare / t_bf16,
        "bf16_cosine_to_fp32_mean": float(cos.mean()), "bf16_cosine_to_fp32_min": float(cos.min()),
    })


if __name__ == "__main__":
    main()
