"""The `sign_in_failed` lines a test captured, by the credential that failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

__all__ = ["failed_sign_ins"]


def failed_sign_ins(caplog: pytest.LogCaptureFixture, credential: str) -> list[dict[str, Any]]:
    """The fields of the `sign_in_failed` lines for `credential` (`admin_key`, `none`)."""
    lines = [
        (record.getMessage(), dict(getattr(record, "fields", {}))) for record in caplog.records
    ]
    return [
        fields
        for event, fields in lines
        if event == "sign_in_failed" and fields["credential"] == credential
    ]
