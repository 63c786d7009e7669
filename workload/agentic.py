"""The text of an agentic conversation: a system prompt with a tool schema, then tool
results that grow the context turn by turn.
The same concept at another layer: ``matrix.agentic``.

Turn 1 is the system prompt (the nonce first, then the agent's instructions and the
tool's JSON schema) and a task over a reference document whose length the planner
searches to the cell's ``input_tokens``. Turn k + 1 is turn k's messages, the
assistant's tool call (planned, so both arms send the same tokens) and the tool's
result, whose length the planner searches to the cell's ``tool_result_tokens``. The
schema lives in the system prompt and each result is a user message, so every chat
template renders the conversation and no engine needs a tool-call parser.
"""

from __future__ import annotations

import json

from workload.prompts import Prompt, PromptKey, canary_of, nonce_of
from workload.text import prose

TOOL_NAME = "search_documents"
TOOL_SCHEMA = {
    "name": TOOL_NAME,
    "description": "Search the document store and return the passages that match a query.",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "description": "Passages to return at most."},
        },
        "required": ["query"],
    },
}
QUERY_WORDS = 6


def opening(key: PromptKey, filler_words: int) -> Prompt:
    """Turn 1: the system prompt with the tool, and the task over a document."""
    nonce, canary = nonce_of(key), canary_of(key)
    system = (
        f"[{nonce}] You are a research agent. You may call this tool:\n"
        f"{json.dumps(TOOL_SCHEMA, sort_keys=True)}\n"
        'To call it, reply with one JSON object {"tool": ..., "arguments": {...}} and '
        "nothing else; answer in prose once you know enough."
    )
    task = (
        f"Request canary: {canary}.\nFind every passage of the store that agrees with the "
        f"reference document below, then summarize what they share.\n\n"
        f"{prose(filler_words, *key.parts('document'))}"
    )
    messages = ({"role": "system", "content": system}, {"role": "user", "content": task})
    return Prompt(messages, nonce, canary, "prose")


def tool_turn(previous: Prompt, key: PromptKey, filler_words: int) -> Prompt:
    """The next turn: ``previous``'s messages, a tool call and a result of ``filler_words``."""
    canary = canary_of(key)
    query = prose(QUERY_WORDS, *key.parts("query")).rstrip(".")
    call = json.dumps({"tool": TOOL_NAME, "arguments": {"query": query, "limit": 5}})
    result = (
        f"Tool result ({TOOL_NAME}); request canary: {canary}.\n"
        f"{prose(filler_words, *key.parts('tool_result'))}\n\n"
        "Call the tool again, or answer if you know enough."
    )
    messages = (
        *previous.messages,
        {"role": "assistant", "content": call},
        {"role": "user", "content": result},
    )
    return Prompt(messages, previous.nonce, canary, previous.text_kind)
