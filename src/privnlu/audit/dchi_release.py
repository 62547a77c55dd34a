"""A d_chi release of a whole split, as the provider's frozen encoder sees it (Qu et al. 2021, section 3).

Each example is tokenized with its [CLS]/[SEP] frame (special tokens and padding are never noised, see
:func:`privnlu.mechanisms.dchi.privatized_positions`), privatized once on the user's side, and the provider
computes its representation ``h`` from what it receives:

* text-to-text: ``h(M_txt(x))``, the privatized token ids through the encoder;
* token-rep: ``h`` from ``M_rep(x)`` fed as input embeddings (the encoder adds position embeddings);
* sequence-rep: ``M_seq(h(x)) = h(x) + N`` on the clean cached representation.

For a few rows (the audited private sentences) the release itself is kept for the attacker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from ..data import TextDataset
from ..mechanisms.dchi import TokenSpace, m_rep, m_seq, m_txt, privatized_positions
from ..models.encoder import SentenceEncoder, pool
from ..rng import SecretGenerator

MECHANISM = {"dchi-text": "text", "dchi-token": "token", "dchi-sequence": "sequence"}


@dataclass
class Release:
    """Provider-side representations of every row, and the kept rows' (ids, mask, released tensor)."""

    features: torch.Tensor
    kept: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    surviving: int = 0  # privatized tokens left unchanged (text-to-text)
    privatized: int = 0  # privatized token positions


@torch.no_grad()
def release(scheme: str, enc: SentenceEncoder, space: TokenSpace, ds: TextDataset, clean: torch.Tensor, eta: float,
            rng: SecretGenerator, *, max_length: int, batch_size: int = 64, keep: torch.Tensor | None = None,
            progress: bool = True, desc: str = "") -> Release:
    mech = MECHANISM[scheme]
    if mech == "sequence":
        return Release(m_seq(clean.float(), eta, rng))
    keep_set = set(keep.tolist()) if keep is not None else set()
    out, rel = [], Release(torch.empty(0))
    bar = tqdm(range(0, len(ds), batch_size), desc=desc or f"{scheme} eta={eta:.3g}", disable=not progress, leave=False)
    for s in bar:
        a = ds.texts_a[s : s + batch_size]
        b = ds.texts_b[s : s + batch_size] if ds.texts_b is not None else None
        tok = enc.tokenize(a, b, max_length=max_length)
        ids, mask, types = tok["input_ids"], tok["attention_mask"], tok.get("token_type_ids")
        pos = privatized_positions(space, ids, mask)
        rel.privatized += int(pos.sum())
        if mech == "text":
            new = m_txt(space, ids, eta, rng, mask)
            rel.surviving += int((new[pos] == ids[pos]).sum())
            h = enc(new, mask, types)
        else:
            new = m_rep(space, ids, eta, rng, mask)
            o = enc.model(inputs_embeds=new.to(enc.device), attention_mask=mask.to(enc.device),
                          token_type_ids=None if types is None else types.to(enc.device))
            h = pool(o, mask.to(enc.device), enc.pooling)
        out.append(h.float().cpu())
        for i in range(len(a)):
            if s + i in keep_set:
                rel.kept[s + i] = (ids[i], mask[i], new[i])
    rel.features = torch.cat(out) if out else torch.zeros(0, enc.dim)
    return rel
