"""A simulated user's attached agent evaluations are kept by asset id, not by name, so
renaming an evaluation keeps it attached: each stored revision's `evaluations` names
become ids (a name no evaluation has, or reads as, stays as it was: resolving it says so)."""

import json

import sqlalchemy as sa
from alembic import op

from sparring.store.asset_specs import spec_name

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    """Rewrite `asset_revisions.content.evaluations` of simulated users as asset ids."""
    conn = op.get_bind()
    found = conn.execute(sa.text("SELECT id, name FROM assets WHERE kind = 'evaluation'")).all()
    ids = {spec_name(name): asset_id for asset_id, name in found}
    ids |= {name: asset_id for asset_id, name in found}  # an exact name first
    rows = conn.execute(
        sa.text(
            "SELECT r.asset_id, r.number, r.content FROM asset_revisions r "
            "JOIN assets a ON a.id = r.asset_id WHERE a.kind = 'simulated_user'"
        )
    ).all()
    for asset_id, number, content in rows:
        data = json.loads(content)
        data["evaluations"] = [ids.get(e, e) for e in data.get("evaluations", [])]
        conn.execute(
            sa.text(
                "UPDATE asset_revisions SET content = :content "
                "WHERE asset_id = :asset_id AND number = :number"
            ),
            {"content": json.dumps(data), "asset_id": asset_id, "number": number},
        )
