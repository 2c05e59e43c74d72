"""The store's first tables: projects and everything they own, the audit of changes, and the
version counter (one row, at 0).

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

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
    op.create_table(
        "bindings",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_bindings_project_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bindings")),
    )
    op.create_index(op.f("ix_bindings_project_id"), "bindings", ["project_id"], unique=False)
    op.create_index("uq_bindings_project_name", "bindings", ["project_id", "name"], unique=True)

    op.create_table(
        "keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("key_hash", sa.String(length=80), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("identity", sa.JSON(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_keys_project_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_keys_key_hash")),
    )
    op.create_index(op.f("ix_keys_project_id"), "keys", ["project_id"], unique=False)
    op.create_index("uq_keys_project_name", "keys", ["project_id", "name"], unique=True)

    op.create_table(
        "policies",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_policies_project_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policies")),
    )
    op.create_index(op.f("ix_policies_project_id"), "policies", ["project_id"], unique=False)
    op.create_index("uq_policies_project_name", "policies", ["project_id", "name"], unique=True)

    op.create_table(
        "providers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("secret", sa.LargeBinary(), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_providers_project_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_providers")),
    )
    op.create_index(op.f("ix_providers_project_id"), "providers", ["project_id"], unique=False)
    op.create_index("uq_providers_project_name", "providers", ["project_id", "name"], unique=True)

    op.create_table(
        "routes",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_routes_project_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routes")),
    )
    op.create_index(op.f("ix_routes_project_id"), "routes", ["project_id"], unique=False)
    op.create_index("uq_routes_project_name", "routes", ["project_id", "name"], unique=True)

    op.create_table(
        "consumers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("model_route_id", sa.String(length=40), nullable=True),
        sa.Column("ai_provider_id", sa.String(length=40), nullable=True),
        sa.Column("model", sa.String(length=256), nullable=True),
        sa.Column("agent_id", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["consumers.id"], name=op.f("fk_consumers_agent_id"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["ai_provider_id"], ["providers.id"], name=op.f("fk_consumers_ai_provider_id")
        ),
        sa.ForeignKeyConstraint(
            ["model_route_id"], ["routes.id"], name=op.f("fk_consumers_model_route_id")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_consumers_project_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consumers")),
    )
    op.create_index(op.f("ix_consumers_project_id"), "consumers", ["project_id"], unique=False)
    op.create_index("uq_consumers_project_name", "consumers", ["project_id", "name"], unique=True)
    meta = sa.table("meta", sa.column("id", sa.Integer()), sa.column("version", sa.Integer()))
    op.bulk_insert(meta, [{"id": 1, "version": 0}])


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
