"""`runs.parent_run_id`: the run a `sparring run --rerun-failed` run reran."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    """Add `runs.parent_run_id` (NULL for the runs already stored)."""
    op.add_column("runs", sa.Column("parent_run_id", sa.String(64)))
