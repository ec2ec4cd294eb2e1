"""Runs, their planned scenarios and their finished trials (JSON report schema 1)."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    """Create `runs`, `scenarios` and `trials`."""
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("started_at", sa.String(40), nullable=False, index=True),
        sa.Column("finished_at", sa.String(40)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("paths", sa.Text, nullable=False),
        sa.Column("invocation", sa.Text, nullable=False),
        sa.Column("settings", sa.Text, nullable=False),
        sa.Column("models", sa.Text, nullable=False),
        sa.Column("head", sa.Text, nullable=False),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_branch", sa.String(255)),
        sa.Column("user_name", sa.String(255)),
        sa.Column("host", sa.String(255)),
        sa.Column("pid", sa.Integer),
    )
    op.create_table(
        "scenarios",
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("scenario_id", sa.String(255), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("scenario_id", sa.String(255), nullable=False),
        sa.Column("trial", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("end_reason", sa.String(32), nullable=False),
        sa.Column("duration_ms", sa.Float, nullable=False),
        sa.Column("cost_usd", sa.Float, nullable=False),
        sa.Column("finished_at", sa.String(40), nullable=False),
        sa.Column("result", sa.Text, nullable=False),
        sa.UniqueConstraint("run_id", "scenario_id", "trial", name="uq_trials_run_scenario_trial"),
    )
    op.create_index("ix_trials_run_id", "trials", ["run_id"])
