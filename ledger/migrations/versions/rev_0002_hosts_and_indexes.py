"""The host that opened each campaign, and the indexes the ledger's queries need.

``campaign.host`` is NULL for campaigns opened before it was recorded. The indexes serve
``faceoff status`` (this host's campaigns, or every host's, by start) and the reads across
campaigns by cell, arm and start. Both changes leave the tables writable by a faceoff from
before migrations (its rows get no host), so ``ledger_meta`` keeps ``schema_version`` 1.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"


def upgrade() -> None:
    op.add_column("campaign", sa.Column("host", sa.String(), nullable=True))
    op.create_index("ix_campaign_created_at", "campaign", ["created_at"])
    op.create_index("ix_campaign_host_created_at", "campaign", ["host", "created_at"])
    op.create_index("ix_cell_run_cell_id_arm", "cell_run", ["cell_id", "arm"])
    op.create_index("ix_cell_run_arm", "cell_run", ["arm"])
    op.create_index("ix_cell_run_started_at", "cell_run", ["started_at"])
