"""`GET /admin/v1/changes`: the audit of every write to the store, newest first.

Rule 1: filters `project_id`, `kind`, `object_id` (exact) and `since_version` (changes after
that version); `limit` (default 100) is capped at 1000. A filter that is not a whole number
where one is needed is a 400 naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.gateway.admin.dispatch import Operation
from turnout.gateway.admin.replies import AdminError, json_body, problems_meta
from turnout.gateway.admin.writes import read
from turnout.store.changes import DEFAULT_LIMIT, MAX_LIMIT, list_changes

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.gateway.responses.respond import Reply

__all__ = ["audit_operations"]

_TEXT_FILTERS = ("project_id", "kind", "object_id")


async def get_changes(call: AdminCall) -> Reply:
    query = call.query
    filters: dict[str, Any] = {name: query[name] for name in _TEXT_FILTERS if query.get(name)}
    since = _whole(query, "since_version", minimum=0)
    if since is not None:
        filters["since_version"] = since
    limit = _whole(query, "limit", minimum=1)
    filters["limit"] = min(limit if limit is not None else DEFAULT_LIMIT, MAX_LIMIT)
    found = await read(call, lambda store: list_changes(store, **filters))
    return json_body(200, {"data": found})


def _whole(query: Mapping[str, str], name: str, *, minimum: int) -> int | None:
    text = query.get(name)
    if text is None or text == "":
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 18 or int(text) < minimum:
        rule = f"must be a whole number of at least {minimum}"
        raise AdminError(400, "VALIDATION_FAILED", f"{name}: {rule}", problems_meta([(name, rule)]))
    return int(text)


def audit_operations() -> tuple[Operation, ...]:
    """`/changes`."""
    filters = (
        ("project_id", {"type": "string"}, "Only changes in this project."),
        ("kind", {"type": "string"}, "Only changes of this kind (`route`, `key` …)."),
        ("object_id", {"type": "string"}, "Only changes of this object."),
        ("since_version", {"type": "integer", "minimum": 0}, "Only changes after this version."),
        ("limit", {"type": "integer", "minimum": 1},
         f"At most this many (default {DEFAULT_LIMIT}, capped at {MAX_LIMIT})."),
    )  # fmt: skip
    return (
        Operation("GET", "/changes", get_changes, "The audit of changes, newest first", "audit",
                  (200, "ChangeList"), query=filters, errors=(400,)),
    )  # fmt: skip
