"""The file names a cell's client reads and writes, its exit statuses, and the request phase
and usage its journal lines carry.

Here, apart from the client, so that the guards and the evidence audit can name the plan
and the journal, and read how the client ended, without loading aiohttp or the runner.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from faceoff.artifact import Spec

PLAN_NAME = "requests.json"
JOURNAL_NAME = "journal.jsonl"
CLIENT_LOG = "client.log"  # the client's stdout and stderr, in the attempt folder
WARMUP_DIR = "warmup"  # an arm's warmups after each start, under its lane run folder

# Exit statuses of ``python -m workload.cell_client`` (128 + N: stopped by signal N).
EXIT_BAD_INPUT = 2
EXIT_DEADLINE = 3


class Phase(StrEnum):
    WARMUP = "warmup"  # journaled, never scored
    SCORED = "scored"
    DIAGNOSTIC = "diagnostic"  # journaled, never scored
    PROBE = "probe"  # a needle search's probe: judged by what it recalled, never a sample
    PILOT = "pilot"  # one request of a cell contract before the scored cells; never scored


class Usage(Spec):
    prompt_tokens: int = Field(ge=0, description="usage.prompt_tokens from the API.")
    completion_tokens: int = Field(ge=0, description="usage.completion_tokens from the API.")
    reasoning_tokens: int | None = Field(
        default=None,
        ge=0,
        description="usage.completion_tokens_details.reasoning_tokens when the server reports it.",
    )
