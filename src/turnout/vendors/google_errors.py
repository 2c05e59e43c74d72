"""Reading Google's structured API errors (`google.rpc.Status`), as Gemini sends them.

The envelope is `{"error": {"code": 429, "message": "…", "status": "RESOURCE_EXHAUSTED",
"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", …}, …]}}`.

Rule 1: the error type is the `status` name (`RESOURCE_EXHAUSTED`, `INVALID_ARGUMENT` …), the
HTTP code being only an echo of the response's status.
Rule 2: a `RESOURCE_EXHAUSTED` error is exhausted quota when its details name a quota that does
not refill within the minute: a `QuotaFailure` violation (or an `ErrorInfo` `quota_limit`)
whose quota id is per day, per project or anything but per minute. A violation of per-minute
quotas only, or no quota details at all, is a rate limit.
Rule 3: `RetryInfo.retryDelay` (a protobuf duration, `"37s"` or `"1.5s"`) is the time to wait,
used when no `Retry-After` header says otherwise.
Rule 4: an `ErrorInfo` reason `API_KEY_INVALID` (which Google sends with status 400) is an
authentication failure.
Reading never raises: a body of another shape gives None.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["GoogleError", "read_google_error"]

_TYPE_PREFIX = "type.googleapis.com/google.rpc."
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_PER_MINUTE = re.compile(r"per\s*minute", re.IGNORECASE)
_AUTH_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED"})


@dataclass(frozen=True, slots=True)
class GoogleError:
    """What a Google error says beyond its message.

    `status` is the `google.rpc.Code` name (Rule 1); `quota` is True for exhausted quota, False
    for a rate limit, None when the error is neither (Rule 2); `retry_after` is `retryDelay` in
    seconds (Rule 3); `auth` marks a refused key (Rule 4).
    """

    status: str | None
    quota: bool | None = None
    retry_after: float | None = None
    auth: bool = False


def read_google_error(data: object) -> GoogleError | None:
    """The Google error in a decoded error body (a list of one is read too), or None."""
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None
    status = error.get("status")
    if not isinstance(status, str) or not status:
        return None
    details = error.get("details")
    items = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
    quota_ids = [quota for item in items for quota in _quota_ids(item)]
    quota: bool | None = None
    if status == "RESOURCE_EXHAUSTED":
        quota = any(not _PER_MINUTE.search(_words(q)) for q in quota_ids)
    return GoogleError(
        status=status,
        quota=quota,
        retry_after=_retry_delay(items),
        auth=any(_kind(i) == "ErrorInfo" and i.get("reason") in _AUTH_REASONS for i in items),
    )


def _kind(item: dict[str, Any]) -> str:
    kind = item.get("@type")
    return kind.removeprefix(_TYPE_PREFIX) if isinstance(kind, str) else ""


def _quota_ids(item: dict[str, Any]) -> list[str]:
    kind = _kind(item)
    if kind == "QuotaFailure":
        violations = item.get("violations")
        if not isinstance(violations, list):
            return ["quota"]
        ids = [
            str(v.get("quotaId") or v.get("quotaMetric") or v.get("subject") or "quota")
            for v in violations
            if isinstance(v, dict)
        ]
        return ids or ["quota"]
    if kind == "ErrorInfo":
        metadata = item.get("metadata")
        limit = metadata.get("quota_limit") if isinstance(metadata, dict) else None
        return [limit] if isinstance(limit, str) and limit else []
    return []


def _words(quota_id: str) -> str:
    """`GenerateRequestsPerMinutePerProject` -> `Generate Requests Per Minute Per Project`."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", quota_id)


def _retry_delay(items: list[dict[str, Any]]) -> float | None:
    for item in items:
        if _kind(item) != "RetryInfo":
            continue
        delay = item.get("retryDelay")
        if isinstance(delay, dict):  # the proto JSON of a Duration object, rarely sent
            seconds = delay.get("seconds", 0)
            nanos = delay.get("nanos", 0)
            if isinstance(seconds, int | str) and isinstance(nanos, int):
                try:
                    return max(0.0, float(seconds) + nanos / 1e9)
                except ValueError:
                    return None
        if isinstance(delay, str):
            found = _DURATION.match(delay)
            if found is not None:
                value = float(found.group(1))
                return value if math.isfinite(value) else None
    return None
