"""The d_chi mechanisms (``M_txt``, ``M_rep``, ``M_seq``) and the fine-tuning modes of Qu et al. 2021's Table 4
(``null``, ``text``, ``token``, ``sequence``) as objects.

Command-line flags and record fields keep their strings (``--dchi-mechanism rep``, ``"mode": "token"``); they are
parsed once, where they enter (:func:`mechanism`, :func:`finetune_mode`), and the code that privatizes, trains,
predicts and writes the model card asks the object what differs. Nothing here imports torch at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import PrivnluError


@dataclass(frozen=True)
class Mechanism:
    """One d_chi mechanism: what the user sends in place of a text."""

    name: str  # the command line's and the records' name
    symbol: str  # the paper's name
    words: str  # the symbol with what it releases, in words
    suffix: str  # the file ``privnlu dchi privatize`` writes
    per_token: bool = True  # noises each token (some may come out unchanged); False: the sentence representation
    sends_tokens: bool = False  # releases token ids (text) rather than vectors
    audit_name: str = ""  # its name in a ``privnlu dp audit`` record

    def __str__(self) -> str:
        return self.name

    def tokens(self, space: Any, ids: Any, eta: float, rng: Any, mask: Any = None, *, index: Any = None) -> Any:
        """The privatized tokens of ``ids``: token ids (``M_txt``) or noisy embeddings (``M_rep``)."""
        from .dchi import m_rep, m_txt

        if not self.per_token:
            raise PrivnluError(f"{self.symbol} privatizes sentence representations, not tokens")
        if self.sends_tokens:
            return m_txt(space, ids, eta, rng, mask, index=index)
        return m_rep(space, ids, eta, rng, mask)

    def embedded(self, space: Any, out: Any) -> Any:
        """The embeddings of privatized tokens ``out`` (``M_txt``: of the output ids; ``M_rep``: themselves)."""
        return space.embeddings[out] if self.sends_tokens else out


TEXT = Mechanism("text", "M_txt", "M_txt (text-to-text)", ".txt", sends_tokens=True, audit_name="txt")
REP = Mechanism("rep", "M_rep", "M_rep (token representations)", ".npz", audit_name="rep")
SEQUENCE = Mechanism("sequence", "M_seq", "M_seq (sequence representation)", ".npz", per_token=False)
#: every mechanism by its name
MECHANISMS = {m.name: m for m in (REP, TEXT, SEQUENCE)}


def mechanism(name: str | Mechanism) -> Mechanism:
    """The mechanism of a name (``text``, ``rep``, ``sequence``; ``txt`` as the audit names it)."""
    if isinstance(name, Mechanism):
        return name
    found = MECHANISMS.get(name) or next((m for m in MECHANISMS.values() if m.audit_name and m.audit_name == name), None)
    if found is None:
        raise PrivnluError(f"unknown d_chi mechanism '{name}'; choose one of {', '.join(MECHANISMS)}")
    return found


@dataclass(frozen=True)
class FinetuneMode:
    """One fine-tuning mode of ``privnlu dchi finetune``: what the provider receives and trains on."""

    name: str
    mechanism: Mechanism | None  # None: no privatization
    #: the provider trains an MLP on the user's privatized sentence representation (no encoder body)
    on_representation: bool = False
    #: the provider receives noisy token embeddings (fed as input embeddings; its embedding table stays frozen)
    sends_embeddings: bool = False
    #: the user side's token table or encoder, as the model folder names it (None: nothing on the user side)
    user_side: str | None = None
    #: what the mode releases and the distance eta multiplies, in words (the model card)
    release: str = ""
    metric: str = ""

    def __str__(self) -> str:
        return self.name

    @property
    def private(self) -> bool:
        return self.mechanism is not None

    @property
    def unit(self) -> str:
        """What one application of the mechanism privatizes: ``token`` or ``sequence``."""
        return "sequence" if self.on_representation else "token"

    def tokens(self, space: Any, ids: Any, eta: float | None, rng: Any, mask: Any = None) -> Any:
        """What the user sends of token ids ``ids``: themselves (no privacy), M_txt ids or M_rep embeddings."""
        if self.mechanism is None:
            return ids
        assert eta is not None
        return self.mechanism.tokens(space, ids, eta, rng, mask)


_TOKEN_METRIC = ("per token: eta * d(x, x'), d the Euclidean distance of the two tokens' embeddings in the user-side "
                 "table")
NULL = FinetuneMode("null", None)
TEXT_MODE = FinetuneMode("text", TEXT, user_side="base", metric=_TOKEN_METRIC,
                         release="M_txt: each regular token is replaced by the vocabulary token nearest to its "
                                 "embedding plus noise")
TOKEN_MODE = FinetuneMode("token", REP, sends_embeddings=True, user_side="saved", metric=_TOKEN_METRIC,
                          release="M_rep: each regular token's embedding plus noise, sent as vectors")
SEQUENCE_MODE = FinetuneMode("sequence", SEQUENCE, on_representation=True, user_side="base",
                             release="M_seq: the sentence representation h(x) of the user-side encoder plus noise",
                             metric="per sequence: eta * d(x, x'), d the Euclidean distance of the user-side sentence "
                                    "representations h(x), h(x')")
#: every mode by its name
FINETUNE_MODES = {m.name: m for m in (NULL, SEQUENCE_MODE, TOKEN_MODE, TEXT_MODE)}


def finetune_mode(name: str | FinetuneMode) -> FinetuneMode:
    """The mode of a name (``null``, ``text``, ``token``, ``sequence``)."""
    if isinstance(name, FinetuneMode):
        return name
    if name not in FINETUNE_MODES:
        raise PrivnluError(f"unknown fine-tuning mode '{name}'; choose one of {', '.join(FINETUNE_MODES)}")
    return FINETUNE_MODES[name]
