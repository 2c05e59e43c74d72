"""The request audit (one row per routed request, one per attempt entry) and the usage ledger
(one row per request that used tokens).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_ID = sa.String(length=40)
_NAME = sa.String(length=128)
_MODEL = sa.String(length=256)
_REQUEST_ID = sa.String(length=160)


def _tokens() -> list[sa.Column[int]]:
    return [
        sa.Column(name, sa.Integer(), nullable=False)
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    ]


def upgrade() -> None:
    op.create_table(
        "request_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("request_id", _REQUEST_ID, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("project_id", _ID, nullable=True),
        sa.Column("project", _NAME, nullable=True),
        sa.Column("key_id", _ID, nullable=True),
        sa.Column("key_name", _NAME, nullable=True),
        sa.Column("endpoint", sa.String(length=64), nullable=False),
        sa.Column("requested_model", _MODEL, nullable=True),
        sa.Column("route", _NAME, nullable=True),
        sa.Column("served_provider", _NAME, nullable=True),
        sa.Column("served_model", _MODEL, nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("cached", sa.Boolean(), nullable=False),
        *_tokens(),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_request_audit")),
        sa.UniqueConstraint("request_id", name=op.f("uq_request_audit_request_id")),
    )
    op.create_index(op.f("ix_request_audit_at"), "request_audit", ["at"], unique=False)
    op.create_index("ix_request_audit_key_at", "request_audit", ["key_id", "at"], unique=False)
    op.create_index(
        "ix_request_audit_project_at", "request_audit", ["project_id", "at"], unique=False
    )

    op.create_table(
        "request_attempts",
        sa.Column("request_id", _REQUEST_ID, nullable=False),
        sa.Column("index", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("target", _NAME, nullable=False),
        sa.Column("provider", _NAME, nullable=True),
        sa.Column("model", _MODEL, nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error_class", sa.String(length=32), nullable=True),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("hedge", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["request_audit.request_id"],
            name=op.f("fk_request_attempts_request_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("request_id", "index", name=op.f("pk_request_attempts")),
    )

    op.create_table(
        "usage_ledger",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", _REQUEST_ID, nullable=False),
        sa.Column("project_id", _ID, nullable=True),
        sa.Column("project", _NAME, nullable=True),
        sa.Column("key_id", _ID, nullable=True),
        sa.Column("key_name", _NAME, nullable=True),
        sa.Column("provider", _NAME, nullable=True),
        sa.Column("model", _MODEL, nullable=True),
        *_tokens(),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_ledger")),
    )
    op.create_index(op.f("ix_usage_ledger_at"), "usage_ledger", ["at"], unique=False)
    op.create_index(
        "ix_usage_ledger_day_project", "usage_ledger", ["day", "project_id"], unique=False
    )
    op.create_index("ix_usage_ledger_key_at", "usage_ledger", ["key_id", "at"], unique=False)
    op.create_index(
        "ix_usage_ledger_project_at", "usage_ledger", ["project_id", "at"], unique=False
    )


def downgrade() -> None:
    op.drop_table("usage_ledger")
    op.drop_table("request_attempts")
    op.drop_table("request_audit")
