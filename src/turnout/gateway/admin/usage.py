"""`GET /admin/v1/requests/{request_id}` and `GET /admin/v1/usage`: the request audit and the
usage ledger, read back.

Rule 1: a request reads back whole (its routing record and attempt rows), or 404 when it was
never audited or is past its retention.
Rule 2: usage is summed on the provider and model that served (`group_by=model`, the default),
or by `key`, `project` or `day`, several joined by commas; `since` (inclusive) and `until`
(exclusive) are ISO 8601 times (UTC without a zone); `project_id` keeps one project. A filter
that cannot be read is a 400 naming it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

from turnout.gateway.admin.dispatch import Operation
from turnout.gateway.admin.replies import AdminError, json_body, problems_meta
from turnout.gateway.admin.writes import read
from turnout.store.usage import GROUPS, get_request, usage_report

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.gateway.responses.respond import Reply

__all__ = ["usage_operations"]


async def get_audited_request(call: AdminCall) -> Reply:
    request_id = call.params["request_id"]
    found = await read(call, get_request, request_id)
    if found is None:
        raise AdminError(404, "NOT_FOUND", f"no audited request {request_id!r}")
    return json_body(200, found)


async def get_usage(call: AdminCall) -> Reply:
    query = call.query
    words = [word.strip() for word in (query.get("group_by") or "model").split(",")]
    unknown = [word for word in words if word not in GROUPS]
    if unknown:
        rule = f"{unknown[0]!r} is not a grouping: use one or more of {', '.join(GROUPS)}"
        _refuse("group_by", rule)
    options: dict[str, Any] = {
        "group_by": words,
        "since": _moment(query, "since"),
        "until": _moment(query, "until"),
        "project_id": query.get("project_id") or None,
    }
    found = await read(call, lambda store: usage_report(store, **options))
    return json_body(200, {"data": found})


def _moment(query: Mapping[str, str], name: str) -> datetime | None:
    text = query.get(name)
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        _refuse(name, "must be an ISO 8601 time, such as 2026-12-01T00:00:00Z")


def _refuse(name: str, rule: str) -> NoReturn:
    raise AdminError(400, "VALIDATION_FAILED", f"{name}: {rule}", problems_meta([(name, rule)]))


def usage_operations() -> tuple[Operation, ...]:
    """`/requests/{request_id}` and `/usage`."""
    filters = (
        ("group_by", {"type": "string"},
         "`model` (default), `key`, `project` or `day`; several joined by commas."),
        ("since", {"type": "string"}, "From this ISO 8601 time (inclusive)."),
        ("until", {"type": "string"}, "Up to this ISO 8601 time (exclusive)."),
        ("project_id", {"type": "string"}, "Only this project."),
    )  # fmt: skip
    return (
        Operation("GET", "/requests/{request_id}", get_audited_request,
                  "One request's audit: its routing record and attempts", "usage",
                  (200, "AuditedRequest"), errors=(404,)),
        Operation("GET", "/usage", get_usage,
                  "Usage and cost by served provider and model, key, project or day", "usage",
                  (200, "UsageReport"), query=filters, errors=(400,)),
    )  # fmt: skip
