"""An index of the request audit by project, route and time, for a route's page.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_request_audit_route_at",
        "request_audit",
        ["project", "route", "at", "status"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_request_audit_route_at", table_name="request_audit")
