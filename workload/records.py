"""The file names a cell's client reads and writes, and its exit statuses (the journal's
name, and the phase and usage its lines carry: ``faceoff.formats.attempt.journal``).

Here, apart from the client, so that the guards and the evidence audit can name the plan
and read how the client ended, without loading aiohttp or the runner.
"""

from __future__ import annotations

PLAN_NAME = "requests.json"
CLIENT_LOG = "client.log"  # the client's stdout and stderr, in the attempt folder
WARMUP_DIR = "warmup"  # an arm's warmups after each start, under its lane run folder

# Exit statuses of ``python -m workload.cell_client`` (128 + N: stopped by signal N).
EXIT_BAD_INPUT = 2
EXIT_DEADLINE = 3
