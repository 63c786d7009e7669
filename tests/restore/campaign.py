"""A campaign as restoration finds it: a frozen matrix on disk and a real SQLite ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from matrix.model import Matrix
from tests.lanes.helpers import now

TOKEN = "router-bearer-restore-77d2"
TOKEN_ENV = "OP_ROUTER_TOKEN"


def matrix(name: str, arms: list[dict[str, Any]], protected: list[str]) -> FrozenMatrix:
    return freeze(
        Matrix.model_validate(
            {
                "campaign": {"name": name, "seed": 7},
                "arms": arms,
                "cells": [{"id": "natural-1024-c1", "kind": "natural", "input_tokens": 1024,
                           "concurrency": 1, "requests": 2}],
                "protected_files": protected,
            }
        )
    )  # fmt: skip


def router(url: str, admin: str) -> dict[str, Any]:
    return {
        "url": url,
        "token_env": TOKEN_ENV,
        "model": "llm.primary",
        "drain_url": f"{admin}/drain",
        "readmit_url": f"{admin}/readmit",
    }


def open_test_campaign(workdir: Path, frozen: FrozenMatrix) -> tuple[Engine, Path]:
    """Write the frozen matrix where restoration reads it and open the campaign row."""
    campaign_dir = workdir / frozen.matrix.campaign.name
    frozen.write(campaign_dir / "matrix.frozen.json")
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        open_campaign(
            session,
            name=frozen.matrix.campaign.name,
            matrix_id=frozen.matrix_id,
            evidence_dir=campaign_dir,
            now=now,
        )
    return engine, campaign_dir
