"""The mock upstream's request log: what each request asked for and what it got.

Rule 1: the log is bounded (`limit` entries, oldest dropped first), so a benchmark that sends
millions of requests keeps a flat memory.
Rule 2: an entry is recorded when the request is read, before any fault is applied, so a hang
or a reset still leaves its line; `status` is filled in when an answer is sent.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from turnout.mock_upstream.faults import describe

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.mock_upstream.faults import Fault

__all__ = ["CREDENTIAL_HEADERS", "LoggedRequest", "RequestLog"]

CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
"""Headers that carry a credential, in the order the log's `credential` picks them."""

_INTERESTING = (
    "anthropic-version",
    "anthropic-beta",
    "content-type",
    "user-agent",
    "x-mock-fault",
    "x-request-id",
    "x-stainless-retry-count",
    "x-turnout-consumer",
    "x-turnout-session-id",
)


@dataclass(slots=True)
class LoggedRequest:
    """One logged request. `time` is epoch seconds; `request_headers` all of its headers (the
    JSON form picks the credential and the headers of interest out of them, when read)."""

    seq: int
    time: float
    method: str
    path: str
    query: str
    model: str | None
    stream: bool
    request_headers: Mapping[str, str]
    body: bytes = b""
    request_id: str | None = None
    fault: Fault | None = None
    status: int | None = None

    @property
    def credential(self) -> str | None:
        """The value of the first credential header present (without `Bearer `)."""
        return credentials_of(self.request_headers)[0]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the body parsed, or as text when it is not JSON)."""
        try:
            body: Any = orjson.loads(self.body) if self.body else None
        except orjson.JSONDecodeError:
            body = self.body.decode("utf-8", "replace")
        credential, credentials = credentials_of(self.request_headers)
        fault = self.fault
        return {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "model": self.model,
            "stream": self.stream,
            "fault": (fault.spec or None) if fault is not None else None,
            "fault_items": describe(fault) if fault is not None else {},
            "credential": credential,
            "credentials": credentials,
            "headers": headers_of_interest(self.request_headers),
            "request_id": self.request_id,
            "status": self.status,
            "body": body,
        }


def credentials_of(headers: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """The first credential value (without `Bearer `) and every credential header present."""
    found = {name: headers[name] for name in CREDENTIAL_HEADERS if name in headers}
    for name in CREDENTIAL_HEADERS:
        value = found.get(name)
        if value is not None:
            if name == "authorization" and value[:7].lower() == "bearer ":
                value = value[7:]
            return value, found
    return None, found


def headers_of_interest(headers: Mapping[str, str]) -> dict[str, str]:
    """The request headers tests look at (never the credential headers: those have their own
    fields)."""
    return {name: headers[name] for name in _INTERESTING if name in headers}


class RequestLog:
    """A bounded, in-order list of `LoggedRequest` (default `limit` 10,000)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._entries: deque[LoggedRequest] = deque(maxlen=limit)
        self._seq = 0

    def next_seq(self) -> int:
        """A new sequence number (1, 2, …), never reused until `clear`."""
        self._seq += 1
        return self._seq

    def add(self, entry: LoggedRequest) -> None:
        """Append an entry (dropping the oldest past the limit)."""
        self._entries.append(entry)

    def clear(self) -> None:
        """Forget every entry and restart the sequence."""
        self._entries.clear()
        self._seq = 0

    def entries(self) -> list[LoggedRequest]:
        """The entries, oldest first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def to_json(self, *, model: str | None = None) -> bytes:
        """The log as a JSON list, optionally only the entries for `model` (exact match)."""
        return orjson.dumps(
            [e.as_dict() for e in self._entries if model is None or e.model == model]
        )
