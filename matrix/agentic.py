"""An agentic cell's declared transcript shape: how many turns, how large each tool result.

The mixed agentic C1 probe of the field reports replays a short tool-calling
conversation one request at a time: a system prompt with a tool schema and a task
(turn 1, ``input_tokens``), then each turn the previous context, the assistant's tool
call and a tool result of ``tool_result_tokens`` (``workload.agentic``). ``requests``
counts every turn of every conversation, so it is a multiple of ``turns``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from faceoff.artifact import Spec

if TYPE_CHECKING:  # matrix.model validates with check_agentic: no import cycle at run time
    from matrix.model import Cell

MAX_TURNS = 8  # a short transcript; each turn is a request role of its own


class Agentic(Spec):
    turns: int = Field(ge=2, le=MAX_TURNS, description="Turns of each conversation.")
    tool_result_tokens: int = Field(
        ge=1, le=1_000_000, description="Tokens each tool result adds to the context."
    )


def check_agentic(cell: Cell) -> None:
    """An agentic cell has a shape and runs whole conversations at C1; else ValueError."""
    shape = cell.agentic
    if cell.kind.value != "agentic":
        if shape is not None:
            raise ValueError(
                f"agentic: only an agentic cell has a transcript (kind is {cell.kind})"
            )
        return
    if shape is None:
        raise ValueError(
            "an agentic cell needs agentic = { turns, tool_result_tokens } (turns of each "
            "conversation, tokens of each tool result)"
        )
    if cell.concurrency != 1:
        raise ValueError(
            f"concurrency = {cell.concurrency}: an agentic cell replays one conversation at a "
            "time (C1); set concurrency = 1"
        )
    if cell.requests % shape.turns:
        raise ValueError(
            f"requests = {cell.requests} is not a whole number of {shape.turns}-turn "
            f"conversations; give a multiple of agentic.turns"
        )


def last_turn_tokens(cell: Cell) -> int:
    """The nominal input of the last turn: turn 1 and every tool result (the assistant's
    planned tool calls add a few tokens more)."""
    shape = cell.agentic
    return cell.input_tokens + (shape.turns - 1) * shape.tool_result_tokens if shape else 0
