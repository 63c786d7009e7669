"""Ledger tables. The ledger indexes native artifacts; it never holds the only copy.

The tables are made and changed by the migrations in ``ledger/migrations`` (a change here
goes with a new revision there; tests/foundation/test_ledger_migrations.py checks that
the two agree). ``alembic_version`` names the ledger's revision.

Format history (``ledger.migrate.LEDGER_SCHEMA_VERSION``, stored in ``ledger_meta``, read
by faceoff from before migrations, which refuses a higher one):
  1 — first release; kept by revisions 0001 and 0002 (docs/ledger.md, "Migrations").
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel


class LedgerMeta(SQLModel, table=True):
    __tablename__ = "ledger_meta"
    key: str = Field(primary_key=True)
    value: str


class CampaignRow(SQLModel, table=True):
    __tablename__ = "campaign"
    __table_args__ = (Index("ix_campaign_host_created_at", "host", "created_at"),)
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, description="Campaign name from the matrix.")
    matrix_id: str = Field(description="sha256 of the frozen matrix; a resume must match it.")
    status: str = Field(default="open", description="open | running | complete | closed_partial")
    evidence_dir: str = Field(description="Folder of the campaign's native artifacts and bundle.")
    created_at: datetime = Field(index=True)
    updated_at: datetime
    closed_at: datetime | None = None
    accepted: int = 0
    failed: int = 0
    blocked: int = 0
    pending: int = 0
    host: str | None = Field(
        default=None,
        description="The host that opened it (ledger.hosts); None: opened before hosts were "
        "recorded.",
    )
    seal_sha256: str | None = Field(
        default=None,
        description="sha256 of its bundle's current SEAL.dsse.json; None: never sealed with a "
        "key, or sealed before seals were recorded.",
    )
    seal_sequence: int | None = Field(default=None, description="That seal's number in its chain.")


class LaneRunRow(SQLModel, table=True):
    __tablename__ = "lane_run"
    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    arm: str
    purpose: str = Field(default="campaign", description="campaign | restore")
    lane_kind: str
    image_digest: str | None = None
    container_id: str | None = None
    pid: int | None = None
    started_at: datetime
    stopped_at: datetime | None = None
    identity_ok: bool | None = None
    identity_reason: str | None = None
    record_path: str | None = Field(default=None, description="lane.json of this run.")


class CellRunRow(SQLModel, table=True):
    __tablename__ = "cell_run"
    __table_args__ = (
        UniqueConstraint("campaign_id", "cell_id", "arm", "attempt"),
        Index("ix_cell_run_cell_id_arm", "cell_id", "arm"),
    )
    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    cell_id: str
    arm: str = Field(index=True)
    attempt: int = Field(default=1, description="A rerun is a new attempt, never an overwrite.")
    disposition: str = Field(default="pending", description="pending | accepted | failed | blocked")
    reason_code: str | None = None
    reason: str | None = None
    interrupted: bool = Field(default=False, description="The attempt never finished (a kill).")
    started_at: datetime | None = Field(default=None, index=True)
    ended_at: datetime | None = None
    artifacts_dir: str | None = None
    verdict_sha256: str | None = None


class RequestRow(SQLModel, table=True):
    __tablename__ = "request_record"
    id: int | None = Field(default=None, primary_key=True)
    cell_run_id: int = Field(foreign_key="cell_run.id", index=True)
    request_index: int
    phase: str = Field(description="scored | warmup | diagnostic")
    status: str
    journal_line: int = Field(description="1-based line in the attempt's journal.jsonl.")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None


class RestorationRow(SQLModel, table=True):
    __tablename__ = "restoration"
    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, unique=True)
    incumbent_arm: str
    image_digest: str | None = None
    state: str = Field(default="required", description="required | restoring | restored | failed")
    reason: str | None = None
    required_at: datetime
    completed_at: datetime | None = None
    attempts: int = 0
    receipt_path: str | None = None
    receipt_sha256: str | None = None


class ReviewRow(SQLModel, table=True):
    __tablename__ = "review"
    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    reviewer: str
    decision: str = Field(description="promote | no_promotion | rerun_cells")
    note: str
    cells: str | None = Field(default=None, description="JSON list of cell runs to rerun.")
    forced_reason: str | None = None
    created_at: datetime
    record_sha256: str
