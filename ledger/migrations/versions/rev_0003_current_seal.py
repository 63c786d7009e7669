"""The campaign's current seal: the sha256 of its bundle's ``SEAL.dsse.json`` and its number
in the campaign's chain, so that an audit by name tells an older seal put back (a rollback
of the bundle, or of a review) from the current one.

NULL for campaigns sealed before it was recorded, or never sealed with a key. Like 0002,
the change leaves the tables writable by an older faceoff (its seals are not recorded), so
``ledger_meta`` keeps ``schema_version`` 1.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"


def upgrade() -> None:
    op.add_column("campaign", sa.Column("seal_sha256", sa.String(), nullable=True))
    op.add_column("campaign", sa.Column("seal_sequence", sa.Integer(), nullable=True))
