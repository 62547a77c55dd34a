"""Result records (the JSON files ``privnlu report`` reads): the fields every record shares, typed.

A record may come from anyone (a results folder sent by a colleague), so before any section renders it, the
fields the report builds tables, file names and links from are checked: ``kind`` and ``task`` are names (no
``/``, no spaces: they may become part of a file name), scores and sizes are numbers, the nested blocks are
objects or lists. A field a record lacks is not an error here (older records lack newer fields; a section that
needs it leaves the record out with a warning); a field of the wrong type is, with one line naming the file and
the field. Fields not listed are kept as they are.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic.functional_validators import PlainValidator

from .base import _fail, finite_number, _text, Bool, List, MLabel, Name, Object, Schema, Text, int_field, number_field, validate

def _text_or_object(v: Any) -> Any:
    if isinstance(v, dict):
        return v
    try:
        return _text(v)
    except Exception:
        raise _fail("must be a line of text or an object") from None


Score = number_field(nonfinite_text=True)
Count = int_field(0)


class ResultRecord(Schema):
    """The shared fields of every result record (see ``docs/design/file-formats.md``)."""

    kind: Name
    task: Name | None = None
    privnlu: Text | None = None
    label: Text | None = None
    variant: Name | None = None
    scheme: Name | None = None
    mode: Name | None = None
    group: Name | None = None
    metric: Name | None = None
    victim: Name | None = None
    attack: Name | None = None
    source: Annotated[Any, PlainValidator(_text_or_object)] | None = None
    m: MLabel | None = None
    k: Count | None = None
    inter: Bool | None = None
    score: Score | None = None
    best_score: Score | None = None
    seconds: Score | None = None
    n_train: Count | None = None
    n_queries: Count | None = None
    n_encodings: Count | None = None
    epochs: Count | None = None
    history: List | None = None
    rows: List | None = None
    results: List | None = None
    spec: Object | None = None
    settings: Object | None = None
    config: Object | None = None
    conditions: Object | None = None
    eval: Object | None = None
    n_eval: Object | None = None
    threat_model: Object | None = None
    payload_meta: Object | None = None
    provenance: Object | None = None


def check_record(record: Any, *, file: object) -> ResultRecord:
    """Validate one result record read from ``file`` (an audit point's numbers too: :func:`check_audit_point`)."""
    rec = validate(ResultRecord, record, file=file)
    if isinstance(record, dict) and record.get("kind") == "audit":
        check_audit_point(record, file=file)
    return rec


def _finite(value: Any, where: str, file: object) -> None:
    from ..errors import require

    require(finite_number(value), f"{file}: field '{where}' is {str(value)[:40]}, not a finite number")


def check_audit_point(record: dict, *, file: object) -> None:
    """The numbers an audit point's verdict is computed from are finite: its utility and interval, the majority
    class, and each threat's rate, chance line and advantage (fields a point lacks are not checked)."""
    for name in ("utility", "chance_utility", "random_guess_reid", "empirical_epsilon"):
        if name in record:
            _finite(record[name], name, file)
    for i, v in enumerate(record.get("utility_ci95") or []):
        _finite(v, f"utility_ci95[{i}]", file)
    threats = record.get("threats") if isinstance(record.get("threats"), dict) else {}
    for key, t in [("reid", record.get("reid"))] + [(f"threats.{k}", v) for k, v in threats.items()]:
        if not isinstance(t, dict):
            continue
        for name in ("rate", "chance", "random_guess", "advantage"):
            if name in t:
                _finite(t[name], f"{key}.{name}", file)
