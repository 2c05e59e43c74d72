"""The store's first tables: projects and everything they own, the audit of changes, and the
version counter (one row, at 0).

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "config_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("admin_key_id", sa.String(length=40), nullable=True),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("object_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=True),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_config_changes")),
    )
    op.create_index(op.f("ix_config_changes_at"), "config_changes", ["at"], unique=False)

    op.create_table(
        "meta",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_meta")),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("default_model_route_id", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("name", name=op.f("uq_projects_name")),
    )
    _create_owned("bindings", sa.Column("settings", sa.JSON(), nullable=False))
    _create_owned(
        "keys",
        sa.Column("key_hash", sa.String(length=80), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("identity", sa.JSON(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        unique="key_hash",
    )
    _create_owned("policies", sa.Column("settings", sa.JSON(), nullable=False))
    _create_owned(
        "providers",
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("secret", sa.LargeBinary(), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=False),
    )
    _create_owned(
        "routes",
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
    )
    _create_owned(
        "consumers",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("model_route_id", sa.String(length=40), nullable=True),
        sa.Column("ai_provider_id", sa.String(length=40), nullable=True),
        sa.Column("model", sa.String(length=256), nullable=True),
        sa.Column("agent_id", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["consumers.id"], name=op.f("fk_consumers_agent_id"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["ai_provider_id"], ["providers.id"], name=op.f("fk_consumers_ai_provider_id")
        ),
        sa.ForeignKeyConstraint(
            ["model_route_id"], ["routes.id"], name=op.f("fk_consumers_model_route_id")
        ),
    )
    meta = sa.table("meta", sa.column("id", sa.Integer()), sa.column("version", sa.Integer()))
    op.bulk_insert(meta, [{"id": 1, "version": 0}])


def _create_owned(
    table: str, *own: sa.Column[Any] | sa.Constraint, unique: str | None = None
) -> None:
    """Create `table`, a table of objects one project owns: its id, project and name, then its
    own columns (and constraints), then the time stamps; deleted with its project, and named
    uniquely within it. `unique` names a column that is unique across every project."""
    constraints: list[sa.Constraint] = [
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f(f"fk_{table}_project_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]
    if unique is not None:
        constraints.append(sa.UniqueConstraint(unique, name=op.f(f"uq_{table}_{unique}")))
    op.create_table(
        table,
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        *own,
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        *constraints,
    )
    op.create_index(op.f(f"ix_{table}_project_id"), table, ["project_id"], unique=False)
    op.create_index(f"uq_{table}_project_name", table, ["project_id", "name"], unique=True)


def downgrade() -> None:
    op.drop_table("consumers")
    op.drop_table("routes")
    op.drop_table("providers")
    op.drop_table("policies")
    op.drop_table("keys")
    op.drop_table("bindings")
    op.drop_table("projects")
    op.drop_table("meta")
    op.drop_table("config_changes")
