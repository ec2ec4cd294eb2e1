"""The platform: assets with revisions (agents, simulated users, agent evaluations), test
suites and their runs, verdict overrides, and local accounts (all empty: nothing stored
before had them)."""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    """Add `assets`, `asset_revisions`, `suites`, `suite_runs`, `overrides`, `accounts`."""
    _assets()
    _suites()
    op.create_table(
        "overrides",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("scenario_id", sa.String(255), nullable=False),
        sa.Column("trial", sa.Integer, nullable=False),
        sa.Column("target", sa.String(255), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("original", sa.Text, nullable=False),
        sa.Column("effect", sa.Text),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("author", sa.String(255), nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
    )
    op.create_index("ix_overrides_run_id", "overrides", ["run_id"])
    op.create_table(
        "accounts",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
    )


def _assets() -> None:
    op.create_table(
        "assets",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("author", sa.String(255)),
        sa.Column("archived_at", sa.String(40)),
        sa.UniqueConstraint("kind", "name", name="uq_assets_kind_name"),
    )
    op.create_table(
        "asset_revisions",
        sa.Column("asset_id", sa.Integer, sa.ForeignKey("assets.id"), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("author", sa.String(255)),
        sa.Column("origin", sa.String(255)),
    )


def _suites() -> None:
    op.create_table(
        "suites",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("cases", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.Column("author", sa.String(255)),
    )
    op.create_table(
        "suite_runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("suite_id", sa.Integer, sa.ForeignKey("suites.id"), nullable=False),
        sa.Column("run_id", sa.String(64), unique=True),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("cases", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("author", sa.String(255)),
        sa.Column("host", sa.String(255)),
        sa.Column("pid", sa.Integer),
    )
    op.create_index("ix_suite_runs_suite_id", "suite_runs", ["suite_id"])
