"""Response bodies and stream chunks exactly as vLLM 0.32 writes them. Pure functions.

Keys, their order and their nulls follow the reference captures key for key, so a
client cannot tell these from a real server's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def sse(obj: Any) -> bytes:
    return f"data: {dumps(obj)}\n\n".encode()


SSE_DONE = b"data: [DONE]\n\n"


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
    }


@dataclass(frozen=True)
class Envelope:
    """What every chunk and response of one request repeats."""

    ident: str
    created: int
    model: str
    fingerprint: str

    def head(self, kind: str) -> dict[str, Any]:
        """The fields every response object opens with."""
        return {"id": self.ident, "object": kind, "created": self.created, "model": self.model}


def chat_role_chunk(env: Envelope) -> dict[str, Any]:
    choice = {
        "index": 0,
        "delta": {"role": "assistant", "content": ""},
        "logprobs": None,
        "finish_reason": None,
    }
    return {
        **env.head("chat.completion.chunk"),
        "choices": [choice],
        "prompt_token_ids": None,
        "prompt_text": None,
    }


def chat_chunk(env: Envelope, delta: dict[str, str], finish: str | None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    if finish is not None:
        choice["stop_reason"] = None
    choice["token_ids"] = None
    return {
        **env.head("chat.completion.chunk"),
        "choices": [choice],
    }


def completion_chunk(env: Envelope, text: str, finish: str | None) -> dict[str, Any]:
    choice = {
        "index": 0,
        "text": text,
        "logprobs": None,
        "finish_reason": finish,
        "stop_reason": None,
        "prompt_token_ids": None,
        "token_ids": None,
    }
    return {
        **env.head("text_completion"),
        "choices": [choice],
    }


def usage_chunk(env: Envelope, kind: str, counts: dict[str, int]) -> dict[str, Any]:
    return {
        **env.head(kind),
        "choices": [],
        "usage": counts,
        "system_fingerprint": env.fingerprint,
    }


def full_usage(counts: dict[str, int]) -> dict[str, Any]:
    return {**counts, "prompt_tokens_details": None, "completion_tokens_details": None}


def chat_response(
    env: Envelope,
    content: str,
    reasoning: tuple[str, str | None],  # (field name, text or None)
    finish: str,
    counts: dict[str, int],
) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        reasoning[0]: reasoning[1],
    }
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": finish,
        "stop_reason": None,
        "token_ids": None,
        "routed_experts": None,
    }
    return {
        **env.head("chat.completion"),
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": env.fingerprint,
        "usage": full_usage(counts),
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "prompt_text": None,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": None,
    }


def completion_response(
    env: Envelope,
    text: str,
    finish: str,
    counts: dict[str, int],
    scored: dict[str, Any] | None = None,  # token_ids, prompt_logprobs, prompt_token_ids
) -> dict[str, Any]:
    choice = {
        "index": 0,
        "text": text,
        "logprobs": None,
        "finish_reason": finish,
        "stop_reason": None,
        "token_ids": None,
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "routed_experts": None,
        **(scored or {}),
    }
    return {
        **env.head("text_completion"),
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": env.fingerprint,
        "usage": full_usage(counts),
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": None,
    }


def models_body(
    model: str, root: str, max_model_len: int, created: int, perm_id: str
) -> dict[str, Any]:
    permission = {
        "id": perm_id,
        "object": "model_permission",
        "created": created,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }
    card = {
        "id": model,
        "object": "model",
        "created": created,
        "owned_by": "vllm",
        "root": root,
        "parent": None,
        "max_model_len": max_model_len,
        "permission": [permission],
    }
    return {"object": "list", "data": [card]}
