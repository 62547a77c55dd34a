"""The shared encoding file (``privnlu encode``, :class:`privnlu.mechanisms.release.SharedPayload`): its public
metadata, and its two tensors checked against it.

A payload is usually another party's file, so everything is checked before any work: the metadata's types and
ranges, ``x`` a non-empty finite float matrix ``(N, d)``, ``y`` the mixed labels ``(N, C)`` with ``C`` the number
of classes the metadata names (1 for a regression task), finite, and ``N = epochs * n_examples`` where both are
stated. A field may be absent (the attack that needs it says so), never null or of another type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic.functional_validators import PlainValidator

from .base import Bool, FieldError, MLabel, Name, Object, Schema, Text, _fail, int_field, validate

def _label_names(v: Any) -> list[str]:
    if (not isinstance(v, list) or len(v) > 100000 or len(set(map(str, v))) != len(v)
            or not all(isinstance(n, str) and 0 < len(n) <= 200 for n in v)):
        raise _fail("must be a list of distinct class names (non-empty texts of at most 200 characters)")
    return v


def _hex(v: Any) -> str:
    if not isinstance(v, str) or not 8 <= len(v) <= 64 or any(c not in "0123456789abcdef" for c in v):
        raise _fail("must be a lower-case hexadecimal fingerprint")
    return v


class PayloadMeta(Schema):
    """The JSON metadata in a payload's safetensors header (see ``docs/design/file-formats.md``)."""

    # absent is allowed (an attack that needs one says so); present, they must be right: null is refused
    m: MLabel = None
    k: int_field(1) = None
    epochs: int_field(1) = None
    n_examples: int_field(1) = None
    inter: Bool = False
    order: Literal["shuffled"] = "shuffled"
    task: Name | None = None
    split: Name | None = None
    label_names: Annotated[list, PlainValidator(_label_names)] | None = None
    encoder: Text | None = None
    encoder_fingerprint: Annotated[str, PlainValidator(_hex)] | None = None
    pooling: Literal["cls", "mean", "pooler"] | None = None
    max_length: int_field(1) | None = None
    bf16: Bool | None = None
    data: Literal["own files", "named task"] | None = None
    scheme: Name | None = None
    dp: Object | None = None


class TensorFacts(Schema):
    """What the check needs to know of a tensor: its shape, whether it holds floats, whether all are finite."""

    shape: tuple[int, ...]
    floating: bool
    finite: bool

    @classmethod
    def of(cls, t) -> "TensorFacts":
        import torch

        floating = bool(t.is_floating_point())
        finite = bool(torch.isfinite(t).all()) if floating and t.numel() else True
        return cls(shape=tuple(t.shape), floating=floating, finite=finite)


class PayloadFile(Schema):
    """A whole payload: the metadata, and its tensors ``x`` (encodings) and ``y`` (mixed labels)."""

    meta: PayloadMeta
    x: TensorFacts
    y: TensorFacts

    def check(self) -> None:
        """The tensors against each other and the metadata (raises :class:`FieldError`)."""
        x, y, meta = self.x, self.y, self.meta
        if len(x.shape) != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise FieldError("x", f"the encodings must be a non-empty (N, d) matrix, not of shape {list(x.shape)}")
        if not x.floating or not x.finite:
            raise FieldError("x", "the encodings must be finite floating-point numbers (no NaN or infinity)")
        n = x.shape[0]
        width = max(1, len(meta.label_names)) if meta.label_names is not None else None
        if len(y.shape) != 2 or y.shape[0] != n or (width is not None and y.shape[1] != width):
            want = f"({n}, {width})" if width is not None else f"({n}, C)"
            raise FieldError("y", f"the mixed labels must be a {want} matrix (one row per encoding"
                                  f"{', one column per class in label_names' if width is not None else ''}), "
                                  f"not of shape {list(y.shape)}")
        if not y.floating or not y.finite:
            raise FieldError("y", "the mixed labels must be finite floating-point numbers (no NaN or infinity)")
        if meta.epochs is not None and meta.n_examples is not None and n != meta.epochs * meta.n_examples:
            raise FieldError("n_examples", f"{meta.epochs} encodings of each of {meta.n_examples} examples are "
                                           f"{meta.epochs * meta.n_examples} rows, but the file holds {n}")


def check_payload(meta: Any, x, y, *, file: object) -> PayloadMeta:
    """Validate a payload read from ``file`` (one line naming the file and the field on the first problem); a DP
    instance encoding payload's guarantee is recomputed by its loader (:mod:`privnlu.mechanisms.release`)."""
    checked = validate(PayloadMeta, meta, file=file)
    out = validate(PayloadFile, {"meta": checked, "x": TensorFacts.of(x), "y": TensorFacts.of(y)}, file=file).meta
    return out
