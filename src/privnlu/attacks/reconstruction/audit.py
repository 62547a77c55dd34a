"""The auditor of the reconstruction attack (Xie & Hong 2021): releases the private examples, hands the attacker
only its view and scores the recovered groups with the release key.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch

from ...mechanisms.release import hide_dataset
from ...mechanisms.texthide import TextHide, m_label
from ...rng import SecretGenerator
from ..conditions import Condition, one_hot
from ..threat import RECONSTRUCTION_THREAT, AttackerView, Corpus
from .attack import CLUSTERINGS, ReconstructionAttack, membership
from .metrics import release_pair_accuracy, success_rates


def score_reconstruction(recovered: torch.Tensor, clusters: list[torch.Tensor], member: torch.Tensor,
                         private_x: torch.Tensor) -> dict:
    """Success of a reconstruction, scored by the auditor with the release key.

    Group ``c``'s true original ``t(c)`` is the private example that most of its members contain. Original
    ``i`` is **reconstructed** when some group with ``t(c) = i`` recovers a vector whose nearest private
    original by cosine (between absolute values: the masks hide each coordinate's sign) is ``i``. The rate is
    the fraction of the ``n`` originals reconstructed; ``cosine_to_truth`` is the mean of
    ``cos(|x_hat_c|, |x_t(c)|)`` over groups. Chance is ``1/n`` per original.
    """
    n = private_x.shape[0]
    if not clusters:
        return {"success": 0.0, "cosine_to_truth": None, "purity": None, "groups": 0, "originals_found": 0}
    truth = torch.stack([member[c].sum(0).argmax() for c in clusters])
    purity = torch.stack([member[c][:, t].mean() for c, t in zip(clusters, truth)])
    xa = torch.nn.functional.normalize(private_x.abs().float(), dim=1)
    ra = torch.nn.functional.normalize(recovered.abs().float(), dim=1)
    cos = ra @ xa.T  # (groups, n)
    nearest = cos.argmax(1)
    ok = torch.zeros(n, dtype=torch.bool)
    ok[truth[nearest == truth]] = True
    return {"success": round(100.0 * float(ok.float().mean()), 2),
            "cosine_to_truth": round(float(cos[torch.arange(len(truth)), truth].mean()), 4),
            "purity": round(float(purity.mean()), 4), "groups": len(clusters),
            "originals_found": int(len(set(truth.tolist())))}


def reconstruction_audit(private_x: torch.Tensor, labels: torch.Tensor, cond: Condition, rng: SecretGenerator, *,
                         epochs: int, auxiliary: Corpus, candidates: Corpus | None = None, private_texts: list[str] | None = None,
                         config=None, methods: tuple[str, ...] | None = None, mechanism=None,
                         num_labels: int | None = None, distractors_x: torch.Tensor | None = None,
                         public: torch.Tensor | None = None, keep_guesses: bool = False, progress: bool = True,
                         noise: str = "per-encoding") -> dict:
    """Xie & Hong 2021 setting: release ``private_x`` ``epochs`` times under ``cond`` (one batch), attack, score.

    With ``mechanism`` (a :class:`~privnlu.mechanisms.dp.EncodingMechanism`) the release is DP instance
    encoding (Xie & Hong 2022): clipped, mixed, masked and noised (:class:`~privnlu.mechanisms.dp.DPTextHide`),
    with a fresh noise draw per encoding or (``noise="per-batch"``, Algorithm 1 as printed) one per batch, i.e.
    per pass here. The mechanism and the reading are public: the scheme grant states them, and the attacker is
    noise-aware by default (it simulates its training releases with the same noise; ``config.noise_aware=False``
    trains it on noise-free releases, as privnlu's attacker did first). The record states which attacker ran.
    Lenient / strict (with ``distractors_x``) / sentence success: :mod:`privnlu.attacks.reconstruction.metrics`.
    With ``public`` the release is TextHide-inter (public rows mixed in; the attack is unchanged). With
    ``keep_guesses`` each method also keeps, per group, the candidate it named and the group's true original.
    """
    import time as _time

    n = len(private_x)
    if mechanism is None:
        hider = TextHide(cond.m, cond.k, dim=private_x.shape[1], rng=rng, public=public)
    else:
        from ...mechanisms.dp import DPTextHide

        hider = DPTextHide(cond.m, cond.k, dim=private_x.shape[1], rng=rng, mechanism=mechanism, public=public,
                           noise=noise)
    payload, key = hide_dataset(hider, private_x, one_hot(labels, num_labels), epochs=epochs, batch_size=n)
    member = membership(key.partners, n, key.public)
    dp = {} if mechanism is None else {"dp": mechanism.to_json(), "dp_noise": noise}  # public: the mechanism, not its draws
    view = AttackerView(RECONSTRUCTION_THREAT, encodings=payload.x, mixed_labels=payload.y,
                        scheme={"m": m_label(cond.m), "k": cond.k, "epochs": epochs, "dim": private_x.shape[1], **dp},
                        auxiliary=auxiliary, candidates=candidates)
    attack = ReconstructionAttack(config, methods or CLUSTERINGS, progress=progress)
    t0 = _time.perf_counter()
    results = attack.run(view)
    total = _time.perf_counter() - t0
    out = {**cond.to_json(), "dp": None if mechanism is None else mechanism.to_json(), "n_private": n, "epochs": epochs, "n_encodings": len(payload.x),
           "pair_train_accuracy": attack.pair_train_accuracy, "attack_seconds": round(total, 2), "methods": {},
           "pair_accuracy": {net: {**acc, "release": release_pair_accuracy(attack.scores[net], member, attack.graph_edges)}
                             for net, acc in attack.pair_accuracy.items()},
           "graph_neighbours": attack.config.graph or None,
           **({} if mechanism is None else {"dp_noise": noise, "attacker_noise_aware": attack.noise_aware,
                                             "attacker_noise_groups": attack.noise_groups}),
           "attacker_config": asdict(attack.config)}  # the attacker's own settings: the record says which attack ran
    for r in results:
        s = score_reconstruction(r.recovered, r.clusters, member, private_x)
        if r.sentence_index is not None and candidates is not None and private_texts is not None:
            truth = [int(member[c].sum(0).argmax()) for c in r.clusters]
            s["sentence_identity"] = round(100.0 * float(np.mean([candidates.texts[j].strip() == private_texts[t].strip()
                                                                  for j, t in zip(r.sentence_index, truth)])), 2)
            if keep_guesses:
                s["guesses"] = [int(j) for j in r.sentence_index]
                s["group_truth"] = truth
        s.update(success_rates(r.recovered, r.clusters, member, private_x, distractors_x=distractors_x,
                               sentence_index=r.sentence_index, candidate_texts=None if candidates is None else candidates.texts,
                               private_texts=private_texts))
        s["seconds"] = {k: round(v, 2) for k, v in r.seconds.items()}
        if r.repaired_groups is not None:
            s["repaired_groups"] = r.repaired_groups
        out["methods"][r.method] = s
    return out
