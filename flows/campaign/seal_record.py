"""The ledger keeps each campaign's current seal: after every command that seals the bundle
(the closing, a review, a restoration), the sha256 of its ``SEAL.dsse.json`` and its number
in the campaign's chain, which ``faceoff audit CAMPAIGN`` holds the bundle to."""

from __future__ import annotations

from sqlalchemy import Engine

from evidence.folder.layout import ENVELOPE_FILE, CampaignFolder
from faceoff.seal_envelope import seal_ref
from ledger.campaigns import record_seal
from ledger.db import session_scope


def keep_current_seal(engine: Engine, campaign: str, folder: CampaignFolder) -> None:
    """Record the bundle's seal as the campaign's current one (nothing without a key's seal)."""
    ref = seal_ref(folder.path(ENVELOPE_FILE))
    if ref is None:
        return
    with session_scope(engine) as session:
        record_seal(session, campaign, ref.sha256, ref.sequence)
