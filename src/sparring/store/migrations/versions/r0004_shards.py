"""`shards`: the slices of a run made by `sparring run --shard K/N --run-id ID`, each with its
own process, status and end; the run ends when every slice has ended."""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    """Add the `shards` table (empty: runs stored before were never sharded)."""
    op.create_table(
        "shards",
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("shard", sa.Integer, primary_key=True),
        sa.Column("shards", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("finished_at", sa.String(40)),
        sa.Column("exit_code", sa.Integer),
        sa.Column("host", sa.String(255)),
        sa.Column("pid", sa.Integer),
    )
