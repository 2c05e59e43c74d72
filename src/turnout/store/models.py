"""The store's tables, as SQLAlchemy 2 typed declarative models; the same for SQLite and
PostgreSQL.

Rule 1: every object belongs to one project and is deleted with it.
Rule 2: routes and providers share one name space per project, ignoring case. Each table holds a
unique index on `(project_id, name)`; the case-insensitive check across both tables is the
service functions' job.
Rule 3: a provider's secret is stored only encrypted (`secret`), a key only as its hash.
Rule 4: every write bumps the one `meta` row's `version` and leaves a `config_changes` row, in
the same transaction, so a replica can see that anything changed by reading one number.
Rule 5: the request audit and the usage ledger name projects and keys by id and name without
foreign keys to them, so a row outlives the objects it names. They hold names, never a key or a
credential.
Rule 6: a dashboard session is stored by the hash of its id, never the id a browser holds.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

__all__ = [
    "Base",
    "Binding",
    "ConfigChange",
    "Consumer",
    "Key",
    "Meta",
    "Policy",
    "Project",
    "Provider",
    "RequestAttempt",
    "RequestAudit",
    "Route",
    "UiSession",
    "UsageEntry",
]

_ID = String(40)
_NAME = String(128)
_NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """The current time, in UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """The declarative base: constraint names fixed by convention, so migrations can name them."""

    metadata = MetaData(naming_convention=_NAMING)
    type_annotation_map = {  # noqa: RUF012 (read by SQLAlchemy once, at class creation)
        dict[str, Any]: JSON,
        datetime: DateTime(timezone=True),
        date: Date,
        bool: Boolean,
        float: Float,
    }


class _Stamped:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class _Owned(_Stamped):
    """An object of one project (deleted with it), named uniquely within it. Its id, project and
    name come first in the table, its time stamps last."""

    __tablename__: str
    id: Mapped[str] = mapped_column(_ID, primary_key=True, sort_order=-1)
    project_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("projects.id", ondelete="CASCADE"), index=True, sort_order=-1
    )
    name: Mapped[str] = mapped_column(_NAME, sort_order=-1)

    @declared_attr.directive
    @classmethod
    def __table_args__(cls) -> tuple[Index, ...]:
        return (Index(f"uq_{cls.__tablename__}_project_name", "project_id", "name", unique=True),)


class Meta(Base):
    """One row: the version counter every write bumps."""

    __tablename__ = "meta"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(Integer)


class Project(_Stamped, Base):
    """A tenant. `default_model_route_id` is checked to be one of its routes by the service
    functions (not a foreign key: projects and routes would point at each other)."""

    __tablename__ = "projects"
    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    name: Mapped[str] = mapped_column(_NAME, unique=True)
    default_model_route_id: Mapped[str | None] = mapped_column(_ID)


class Provider(_Owned, Base):
    """A provider; `settings` holds its config fields but `name`, `kind` and `api_key`."""

    __tablename__ = "providers"
    kind: Mapped[str] = mapped_column(String(32))
    settings: Mapped[dict[str, Any]]
    secret: Mapped[bytes | None] = mapped_column(LargeBinary)
    source: Mapped[str] = mapped_column(String(8), default="api")


class Route(_Owned, Base):
    """A route; `settings` holds its config fields but `name` (targets included)."""

    __tablename__ = "routes"
    settings: Mapped[dict[str, Any]]
    source: Mapped[str] = mapped_column(String(8), default="api")


class Consumer(_Owned, Base):
    """A consumer (agent, chat, discussion, memory) and its assignment."""

    __tablename__ = "consumers"
    kind: Mapped[str] = mapped_column(String(16))
    model_route_id: Mapped[str | None] = mapped_column(_ID, ForeignKey("routes.id"))
    ai_provider_id: Mapped[str | None] = mapped_column(_ID, ForeignKey("providers.id"))
    model: Mapped[str | None] = mapped_column(String(256))
    agent_id: Mapped[str | None] = mapped_column(
        _ID, ForeignKey("consumers.id", ondelete="CASCADE")
    )


class Key(_Owned, Base):
    """A caller key: its hash (never the key), a prefix to recognise it by, its identity."""

    __tablename__ = "keys"
    key_hash: Mapped[str] = mapped_column(String(80), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    identity: Mapped[dict[str, Any]]
    revoked_at: Mapped[datetime | None]


class Binding(_Owned, Base):
    """An access binding; `settings` holds its config fields but `name`."""

    __tablename__ = "bindings"
    settings: Mapped[dict[str, Any]]


class Policy(_Owned, Base):
    """A routing policy; `settings` holds its config fields but `name`."""

    __tablename__ = "policies"
    settings: Mapped[dict[str, Any]]


class ConfigChange(Base):
    """The audit of one write: who (admin key id), what, and the object before and after, with
    secrets masked. Kept when the object or its project is deleted (no foreign keys)."""

    __tablename__ = "config_changes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    version: Mapped[int] = mapped_column(Integer)
    admin_key_id: Mapped[str | None] = mapped_column(_ID)
    action: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(16))
    object_id: Mapped[str] = mapped_column(_ID)
    project_id: Mapped[str | None] = mapped_column(_ID)
    before: Mapped[dict[str, Any] | None]
    after: Mapped[dict[str, Any] | None]


_REQUEST_ID = String(160)
_MODEL = String(256)


class RequestAudit(Base):
    """One routed request: who called (names and ids, never a key), what it asked for, who
    served, how it ended, its usage and cost, and its whole routing record (`record`)."""

    __tablename__ = "request_audit"
    __table_args__ = (
        Index("ix_request_audit_project_at", "project_id", "at"),
        Index("ix_request_audit_key_at", "key_id", "at"),
        # A route's page counts its requests in a window from this index alone.
        Index("ix_request_audit_route_at", "project", "route", "at", "status"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    request_id: Mapped[str] = mapped_column(_REQUEST_ID, unique=True)
    at: Mapped[datetime] = mapped_column(index=True)
    project_id: Mapped[str | None] = mapped_column(_ID)
    project: Mapped[str | None] = mapped_column(_NAME)
    key_id: Mapped[str | None] = mapped_column(_ID)
    key_name: Mapped[str | None] = mapped_column(_NAME)
    endpoint: Mapped[str] = mapped_column(String(64))
    requested_model: Mapped[str | None] = mapped_column(_MODEL)
    route: Mapped[str | None] = mapped_column(_NAME)
    served_provider: Mapped[str | None] = mapped_column(_NAME)
    served_model: Mapped[str | None] = mapped_column(_MODEL)
    outcome: Mapped[str] = mapped_column(String(16))
    status: Mapped[int] = mapped_column(Integer)
    error_code: Mapped[str | None] = mapped_column(String(64))
    latency_ms: Mapped[int] = mapped_column(Integer)
    cached: Mapped[bool]
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    cache_read_tokens: Mapped[int] = mapped_column(Integer)
    cache_write_tokens: Mapped[int] = mapped_column(Integer)
    cost: Mapped[float | None]
    record: Mapped[dict[str, Any]]


class RequestAttempt(Base):
    """One attempt entry of an audited request (a call, or a target skipped or not tried);
    deleted with its request's audit row."""

    __tablename__ = "request_attempts"
    request_id: Mapped[str] = mapped_column(
        _REQUEST_ID,
        ForeignKey("request_audit.request_id", ondelete="CASCADE"),
        primary_key=True,
    )
    index: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    target: Mapped[str] = mapped_column(_NAME)
    provider: Mapped[str | None] = mapped_column(_NAME)
    model: Mapped[str | None] = mapped_column(_MODEL)
    outcome: Mapped[str] = mapped_column(String(16))
    error_class: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[int | None] = mapped_column(Integer)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    hedge: Mapped[bool]


class UsageEntry(Base):
    """One request's billed usage, priced on the provider and model that served it. `id` is
    made once per entry, before its first write, so writing it again changes nothing."""

    __tablename__ = "usage_ledger"
    __table_args__ = (
        Index("ix_usage_ledger_day_project", "day", "project_id"),
        Index("ix_usage_ledger_project_at", "project_id", "at"),
        Index("ix_usage_ledger_key_at", "key_id", "at"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    day: Mapped[date]
    at: Mapped[datetime] = mapped_column(index=True)
    request_id: Mapped[str] = mapped_column(_REQUEST_ID)
    project_id: Mapped[str | None] = mapped_column(_ID)
    project: Mapped[str | None] = mapped_column(_NAME)
    key_id: Mapped[str | None] = mapped_column(_ID)
    key_name: Mapped[str | None] = mapped_column(_NAME)
    provider: Mapped[str | None] = mapped_column(_NAME)
    model: Mapped[str | None] = mapped_column(_MODEL)
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    cache_read_tokens: Mapped[int] = mapped_column(Integer)
    cache_write_tokens: Mapped[int] = mapped_column(Integer)
    cost: Mapped[float | None]


class UiSession(Base):
    """One signed-in dashboard browser: the SHA-256 of its random session id (never the id
    itself), the hash of the admin key it signed in with, and when it expires. Signing out
    deletes the row, so the cookie stops working on every replica at once."""

    __tablename__ = "ui_sessions"
    id_hash: Mapped[str] = mapped_column(String(80), primary_key=True)
    admin_key_hash: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(index=True)
