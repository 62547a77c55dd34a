"""A user-side API that privatizes raw texts with d_chi-privacy, and a streaming file privatizer.

``DchiPrivatizer`` wraps the three mechanisms of :mod:`privnlu.mechanisms.dchi`
for use inside a data pipeline::

    p = DchiPrivatizer.load(eta=175, mechanism="text")         # packaged MiniLM vocabulary
    p.privatize(["the movie was great"])                        # -> ['the film was great'] (random)

* ``text``: WordPiece tokens -> ``M_txt`` -> text (``tokenizer.decode``), what
  the user sends; a provider re-tokenizes it.
* ``rep``: the noisy embeddings of the text's tokens, one (L, n) float32 array
  per text, *without* [CLS]/[SEP] framing (the provider adds those and the
  position embeddings). Special tokens inside the text ([UNK], a literal
  [MASK]) keep their public, un-noised embedding.
* ``sequence``: the user-side encoder's sentence representation ``h(x)`` plus
  noise in R^d, one (d,) array per text.

Texts longer than ``max_length`` tokens (counting [CLS] and [SEP]) are
truncated, and the caller is told (``truncated`` in the batch result), so the
CLI can warn. Noise comes from a :class:`~privnlu.rng.SecretGenerator`
(secure by default).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np
import torch
from tqdm.auto import tqdm

from ..choices import DCHI_MECHANISMS
from ..errors import PrivnluError, require_choice
from ..io import atomic_path
from ..rng import SecretGenerator
from .dchi import HNSWIndex, TokenSpace, check_eta, m_seq
from .dchi_modes import MECHANISMS as MECHANISM_OBJECTS, Mechanism, mechanism as parse_mechanism

MECHANISMS = DCHI_MECHANISMS
OUTPUT_SUFFIX = {m.name: m.suffix for m in MECHANISM_OBJECTS.values()}


def check_mechanism(name: str) -> str:
    require_choice("mechanism", name, MECHANISMS)
    return name


@dataclass
class Batch:
    """The output for a list of texts; ``truncated[i]`` is the original token count when text i was cut, else 0."""

    outputs: list
    truncated: list[int]


@dataclass
class DchiPrivatizer:
    """Privatize texts on the user's side with one d_chi mechanism (see the module docstring)."""

    space: TokenSpace
    tokenizer: object
    eta: float
    mechanism: str = "text"
    rng: SecretGenerator = field(default_factory=SecretGenerator)
    max_length: int = 128
    index: HNSWIndex | None = None
    encoder: torch.nn.Module | None = None  # a SentenceEncoder, needed for mechanism='sequence'

    def __post_init__(self) -> None:
        self.eta = check_eta(self.eta)
        check_mechanism(self.mechanism)
        if self.max_length < 3:
            raise PrivnluError(f"--max-length must be at least 3 ([CLS], one token, [SEP]), not {self.max_length}")
        if not self.mech.per_token and self.encoder is None:
            raise PrivnluError("the sequence mechanism needs the user-side encoder")

    @property
    def mech(self) -> Mechanism:
        """The mechanism (:mod:`.dchi_modes`) that ``mechanism`` names."""
        return parse_mechanism(self.mechanism)

    @classmethod
    def load(cls, *, eta: float, mechanism: str = "text", model: str | Path | None = None, pooling: str = "cls",
             rng: SecretGenerator | None = None, max_length: int = 128, hnsw: bool = False) -> "DchiPrivatizer":
        """Build from a local model folder (default: the packaged MiniLM)."""
        from ..models import load_encoder

        check_eta(eta)
        mech = parse_mechanism(check_mechanism(mechanism))
        enc = load_encoder(model, pooling=pooling)
        space = TokenSpace.from_model(enc.model, enc.tokenizer)
        return cls(space, enc.tokenizer, eta, mechanism, rng or SecretGenerator(), max_length,
                   HNSWIndex(space) if hnsw and mech.sends_tokens else None,
                   None if mech.per_token else enc)

    # -- tokens ----------------------------------------------------------
    def token_ids(self, texts: list[str]) -> tuple[list[list[int]], list[int]]:
        """Content token ids (no [CLS]/[SEP]) cut to ``max_length - 2``, and the original lengths of cut texts."""
        limit = self.max_length - 2
        ids = self.tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]
        cut = [len(x) if len(x) > limit else 0 for x in ids]
        return [x[:limit] for x in ids], cut

    def _padded(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max((len(x) for x in ids), default=0)
        out = torch.full((len(ids), max(width, 1)), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(out)
        for i, x in enumerate(ids):
            out[i, : len(x)] = torch.tensor(x, dtype=torch.long)
            mask[i, : len(x)] = 1
        return out, mask

    # -- mechanisms ------------------------------------------------------
    def privatize(self, texts: list[str]) -> list:
        """The privatized output of each text (str, (L, n) array, or (d,) array by mechanism)."""
        return self.privatize_batch(texts).outputs

    def privatize_batch(self, texts: list[str]) -> Batch:
        mech = self.mech
        if not mech.per_token:
            return self._sequence(texts)
        ids, cut = self.token_ids(texts)
        padded, mask = self._padded(ids)
        if mech.sends_tokens:
            out = mech.tokens(self.space, padded, self.eta, self.rng, mask, index=self.index)
            texts_out = [self.tokenizer.decode(out[i, : len(x)].tolist(), clean_up_tokenization_spaces=False) for i, x in enumerate(ids)]
            return Batch(texts_out, cut)
        emb = mech.tokens(self.space, padded, self.eta, self.rng, mask)
        return Batch([emb[i, : len(x)].numpy() for i, x in enumerate(ids)], cut)

    def _sequence(self, texts: list[str]) -> Batch:
        enc = self.encoder
        assert enc is not None
        _, cut = self.token_ids(texts)
        batch = enc.tokenize(texts, max_length=self.max_length)
        with torch.no_grad():
            h = enc(**{k: v.to(enc.device) for k, v in batch.items()}).float().cpu()
        return Batch(list(m_seq(h, self.eta, self.rng).numpy()), cut)


# -- files ---------------------------------------------------------------

def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of a UTF-8 file, streamed; a clear error for a missing or non-UTF-8 file."""
    path = Path(path)
    if not path.is_file():
        raise PrivnluError(f"input file {path} not found")
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, 1):
            try:
                yield no, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise PrivnluError(f"{path}: line {no} is not UTF-8 text") from None


def chunked(lines: Iterable[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    buf: list[tuple[int, str]] = []
    for item in lines:
        buf.append(item)
        if len(buf) == size:
            yield buf
            buf = []
    if buf:
        yield buf


@dataclass
class FileSummary:
    texts: int = 0
    tokens: int = 0
    truncated: list[tuple[int, int]] = field(default_factory=list)  # (line number, original token count)


def privatize_file(privatizer: DchiPrivatizer, in_path: str | Path, out_path: str | Path, *, chunk_lines: int = 256,
                   on_truncate: Callable[[int, int], None] | None = None) -> FileSummary:
    """Stream ``in_path`` (one text per line) through ``privatizer`` into ``out_path``, atomically.

    ``text`` writes one privatized text per line (blank lines stay blank).
    ``rep``/``sequence`` write an ``.npz`` holding, per chunk ``k`` of lines,
    ``emb_k`` (all tokens of the chunk, (T, n)) and ``len_k`` (tokens per text),
    or ``rep_k`` ((B, d)); read it back with :func:`load_privatized`. Nothing is
    left at ``out_path`` if the input is empty or any error occurs.
    """
    summary = FileSummary()
    with atomic_path(out_path) as tmp:
        if privatizer.mech.sends_tokens:
            with open(tmp, "w", encoding="utf-8") as out:
                _stream(privatizer, in_path, chunk_lines, summary, on_truncate,
                        lambda k, b: out.write("".join(t + "\n" for t in b.outputs)))
        else:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
                _stream(privatizer, in_path, chunk_lines, summary, on_truncate, lambda k, b: _write_npz_chunk(zf, k, b, privatizer))
        if summary.texts == 0:
            raise PrivnluError(f"input file {in_path} is empty: nothing to privatize")
    return summary


def _stream(privatizer: DchiPrivatizer, in_path, chunk_lines: int, summary: FileSummary, on_truncate, write) -> None:
    with open(in_path, "rb") as fh:
        total = sum(1 for _ in fh)
    with tqdm(total=total, desc=f"privatize ({privatizer.mechanism})", unit="line") as bar:
        for k, chunk in enumerate(chunked(read_lines(in_path), chunk_lines)):
            _privatize_chunk(privatizer, k, chunk, summary, on_truncate, write)
            bar.update(len(chunk))


def _privatize_chunk(privatizer: DchiPrivatizer, k: int, chunk, summary: FileSummary, on_truncate, write) -> None:
    """Privatize one chunk of (line number, text) pairs, note truncations, count and write it."""
    batch = privatizer.privatize_batch([t for _, t in chunk])
    for (no, _), n in zip(chunk, batch.truncated):
        if n:
            summary.truncated.append((no, n))
            if on_truncate is not None:
                on_truncate(no, n)
    summary.texts += len(chunk)
    if privatizer.mech.per_token:
        summary.tokens += sum(len(o) if isinstance(o, np.ndarray) else 0 for o in batch.outputs)
    write(k, batch)


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _write_npz_chunk(zf: zipfile.ZipFile, k: int, batch: Batch, privatizer: DchiPrivatizer) -> None:
    if not privatizer.mech.per_token:
        zf.writestr(f"rep_{k:06d}.npy", _npy_bytes(np.stack(batch.outputs).astype(np.float32)))
        return
    dim = privatizer.space.dim
    lens = np.array([len(o) for o in batch.outputs], dtype=np.int64)
    emb = np.concatenate(batch.outputs).astype(np.float32) if lens.sum() else np.zeros((0, dim), np.float32)
    zf.writestr(f"len_{k:06d}.npy", _npy_bytes(lens))
    zf.writestr(f"emb_{k:06d}.npy", _npy_bytes(emb))


def load_privatized(path: str | Path) -> Iterator[np.ndarray]:
    """Iterate a ``rep``/``sequence`` output file: one array per input line, in order."""
    with np.load(path) as z:
        names = sorted(z.files)
        for name in (n for n in names if n.startswith("rep_")):
            yield from z[name]
        for name in (n for n in names if n.startswith("emb_")):
            emb, lens = z[name], z["len_" + name[4:]]
            yield from np.split(emb, np.cumsum(lens)[:-1]) if len(lens) else []
