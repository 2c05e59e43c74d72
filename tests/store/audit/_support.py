"""Shared helpers of the audit and usage suites: finished routing records, submitted to a writer,
and row counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from turnout.record import AttemptEntry, FinishedRequest, RoutingRecord, Usage
from turnout.store.models import RequestAttempt, RequestAudit, UsageEntry

if TYPE_CHECKING:
    from turnout.store import Store
    from turnout.store.audit_pipe import AuditPipe
    from turnout.store.ledger import AuditWriter

NOW = 1_790_000_000.0
"""A fixed 'now' (2026-09-21 UTC), epoch seconds."""
DAY = 86_400.0


def record(
    request_id: str,
    *,
    provider: str = "openai",
    model: str = "gpt-4o-mini",
    tokens: tuple[int, int] = (100, 20),
    cost: float | None = 0.001,
) -> dict[str, Any]:
    """A finished record as plain JSON: one failed call on `backup`, then `provider`/`model`
    answering with `tokens` (input, output) at `cost`; `tokens` (0, 0) means no usage."""
    routed = RoutingRecord(request_id, "main", "route_1", "failover", "first target")
    routed.requested_model = "fast"
    failed = routed.add(AttemptEntry(0, "backup", 0, "failed", "other", "m-other"))
    failed.error_class, failed.status, failed.duration_ms = "rate_limited", 429, 12
    answered = routed.add(AttemptEntry(0, "main", 1, "answered", provider, model))
    answered.duration_ms = 40
    routed.answered, routed.served_provider, routed.served_model = "main", provider, model
    if any(tokens):
        routed.usage = Usage(*tokens)
        routed.cost = cost
    return routed.as_dict()


def finished(
    made: RoutingRecord | dict[str, Any],
    *,
    at: float = NOW,
    project: str | None = "default",
    key_name: str | None = "app",
    endpoint: str = "/v1/chat/completions",
    latency_ms: int = 5,
) -> FinishedRequest:
    """One answered request with status 200, as the observer hands it to the audit sink."""
    return FinishedRequest(
        made,
        at=at,
        project=project,
        key_name=key_name,
        endpoint=endpoint,
        status=200,
        outcome="answered",
        latency_ms=latency_ms,
    )


def submit(
    writer: AuditWriter | AuditPipe,
    request_id: str,
    *,
    at: float = NOW,
    project: str | None = "default",
    key_name: str | None = "app",
    **options: Any,
) -> None:
    """Submit one answered request to `writer`."""
    made = record(request_id, **options)
    writer.submit(finished(made, at=at, project=project, key_name=key_name, latency_ms=55))


def counts(store: Store) -> tuple[int, int, int]:
    """Rows in (request_audit, request_attempts, usage_ledger)."""
    with store.engine.connect() as connection:
        return tuple(  # type: ignore[return-value]
            connection.execute(select(func.count()).select_from(model)).scalar_one()
            for model in (RequestAudit, RequestAttempt, UsageEntry)
        )
