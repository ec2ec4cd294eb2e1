"""`runs.baseline`: the run `sparring baseline RUN` marked, which `sparring diff` compares
against by default (at most one run of a store is marked)."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    """Add `runs.baseline` (false for the runs already stored)."""
    op.add_column(
        "runs", sa.Column("baseline", sa.Boolean, nullable=False, server_default=sa.false())
    )
