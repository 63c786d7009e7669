"""An agentic cell's declared transcript shape: how many turns, how large each tool result.
The same concept at another layer: ``workload.agentic``.

The mixed agentic C1 probe of the field reports replays a short tool-calling
conversation one request at a time: a system prompt with a tool schema and a task
(turn 1, ``input_tokens``), then each turn the previous context, the assistant's tool
call and a tool result of ``tool_result_tokens`` (``workload.agentic``). ``requests``
counts every turn of every conversation, so it is a multiple of ``turns``.
"""

from __future__ import annotations

from pydantic import Field

from faceoff.artifact import Spec

MAX_TURNS = 8  # a short transcript; each turn is a request role of its own


class Agentic(Spec):
    turns: int = Field(ge=2, le=MAX_TURNS, description="Turns of each conversation.")
    tool_result_tokens: int = Field(
        ge=1, le=1_000_000, description="Tokens each tool result adds to the context."
    )
