"""The audit's statements and values, kept apart from the database toolkit: the column lengths
they fit texts to are the models' own."""

from __future__ import annotations

from sqlalchemy import String

from turnout.store.audit_rows import ATTEMPT_FIELDS, AUDIT_FIELDS, USAGE_FIELDS
from turnout.store.audit_sql import ATTEMPT_TEXTS, AUDIT_TEXTS, TEXT_LENGTHS, fit
from turnout.store.models import Base, RequestAttempt, RequestAudit, UsageEntry


def _lengths(model: type[Base], fields: tuple[str, ...]) -> dict[str, int]:
    return {
        column.name: column.type.length
        for column in model.__table__.columns
        if isinstance(column.type, String) and column.type.length and column.name in fields
    }


def test_the_text_lengths_are_the_models() -> None:
    """Every text column a row of the audit writes has the length the models give it."""
    assert {
        "request_audit": _lengths(RequestAudit, AUDIT_FIELDS),
        "request_attempts": _lengths(RequestAttempt, ATTEMPT_FIELDS),
        "usage_ledger": _lengths(UsageEntry, USAGE_FIELDS),
    } == TEXT_LENGTHS


def test_fit_cuts_texts_and_leaves_other_values() -> None:
    """Each text is cut to its own column's length; a row that fits is returned as it is."""
    row = tuple("x" * 300 if name in ("route", "served_model") else None for name in AUDIT_FIELDS)
    fitted = fit(row, AUDIT_TEXTS)
    lengths = {AUDIT_FIELDS[at]: len(value) for at, value in enumerate(fitted) if value}
    assert lengths == {"route": 128, "served_model": 256}
    short = tuple("ok" if at == 0 else None for at in range(len(ATTEMPT_FIELDS)))
    assert fit(short, ATTEMPT_TEXTS) is short
