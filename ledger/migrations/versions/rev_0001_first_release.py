"""The ledger as faceoff created it before migrations (``SQLModel.metadata.create_all``).

Exactly that schema, so that a ledger from then is stamped with this revision rather than
created again (tests/data/ledger/v1_*.sql holds its DDL, frozen).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None


def upgrade() -> None:
    meta = op.create_table(
        "ledger_meta",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("value", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "campaign",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("matrix_id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("evidence_dir", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("accepted", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("blocked", sa.Integer(), nullable=False),
        sa.Column("pending", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_campaign_name", "campaign", ["name"], unique=True)
    op.create_table(
        "cell_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("cell_id", sa.String(), nullable=False),
        sa.Column("arm", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("disposition", sa.String(), nullable=False),
        sa.Column("reason_code", sa.String(), nullable=True),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("interrupted", sa.Boolean(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("artifacts_dir", sa.String(), nullable=True),
        sa.Column("verdict_sha256", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("campaign_id", "cell_id", "arm", "attempt"),
    )
    op.create_index("ix_cell_run_campaign_id", "cell_run", ["campaign_id"])
    op.create_table(
        "lane_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("arm", sa.String(), nullable=False),
        sa.Column("purpose", sa.String(), nullable=False),
        sa.Column("lane_kind", sa.String(), nullable=False),
        sa.Column("image_digest", sa.String(), nullable=True),
        sa.Column("container_id", sa.String(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("identity_ok", sa.Boolean(), nullable=True),
        sa.Column("identity_reason", sa.String(), nullable=True),
        sa.Column("record_path", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_lane_run_campaign_id", "lane_run", ["campaign_id"])
    op.create_table(
        "restoration",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("incumbent_arm", sa.String(), nullable=False),
        sa.Column("image_digest", sa.String(), nullable=True),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("required_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("receipt_path", sa.String(), nullable=True),
        sa.Column("receipt_sha256", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_restoration_campaign_id", "restoration", ["campaign_id"], unique=True)
    op.create_table(
        "review",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("decision", sa.String(), nullable=False),
        sa.Column("note", sa.String(), nullable=False),
        sa.Column("cells", sa.String(), nullable=True),
        sa.Column("forced_reason", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("record_sha256", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_review_campaign_id", "review", ["campaign_id"])
    op.create_table(
        "request_record",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cell_run_id", sa.Integer(), nullable=False),
        sa.Column("request_index", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("journal_line", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("ttft_s", sa.Float(), nullable=True),
        sa.Column("e2e_s", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["cell_run_id"], ["cell_run.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_request_record_cell_run_id", "request_record", ["cell_run_id"])
    # What the first open of a ledger wrote before migrations: faceoff from then reads it.
    op.bulk_insert(meta, [{"key": "schema_version", "value": "1"}])
