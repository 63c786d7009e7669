"""The decisions a reviewer records (``faceoff review --decision``): a record of its own, so
that the command line names them without loading the bundle machinery."""

from __future__ import annotations

from enum import StrEnum


class Decision(StrEnum):
    PROMOTE = "promote"
    NO_PROMOTION = "no_promotion"
    RERUN_CELLS = "rerun_cells"
