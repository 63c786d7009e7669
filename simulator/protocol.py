"""Request bodies as vLLM 0.32 accepts them, and its errors. Pure functions.

Chat and completion bodies are parsed into ``GenerationRequest`` (the prompt
tokenized, the output conventions located); bad input raises ``ApiError``, which
renders as ``{"error": {"message", "type", "param", "code"}}`` with vLLM's status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.profile import EFFORTS
from simulator.tokenizer import Tokenizer, TokenizerError, last_user_text, render_chat

ERROR_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    429: "TooManyRequestsError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param

    def body(self) -> dict[str, Any]:
        kind = ERROR_TYPES.get(self.status, "InternalServerError")
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.status,
            }
        }


@dataclass(frozen=True)
class GenerationRequest:
    endpoint: str  # "chat" or "completion"
    model: str | None
    prompt_tokens: list[int]
    instruction: str  # last user message / prompt text: output conventions are read here
    context_text: str  # the whole prompt text: a needle marker is searched here
    stream: bool = False
    include_usage: bool = False
    continuous_usage: bool = False
    max_tokens: int | None = None
    seed: int | None = None
    ignore_eos: bool = False
    reasoning: bool = False  # chat only: a completion request never reasons
    reasoning_effort: str | None = None
    response_format: dict[str, Any] | None = None
    temperature: float | None = None
    prompt_logprobs: int | None = None  # completions only: k per prompt position, -1 = all
    return_token_ids: bool = False


def effort_or_none(value: Any) -> str | None:
    return value if value in EFFORTS else None


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object")
    return body


def optional(body: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = body.get(key)
    wrong = not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)
    if value is not None and wrong:
        raise ApiError(400, f"'{key}' has the wrong type: {value!r}", param=key)
    return value


def max_tokens_of(body: dict[str, Any]) -> int | None:
    value: int | None = optional(body, "max_completion_tokens", int)
    value = optional(body, "max_tokens", int) if value is None else value
    if value is not None and value < 1:
        raise ApiError(400, f"max_tokens must be at least 1, got {value}.", param="max_tokens")
    return value


def stream_options(body: dict[str, Any]) -> tuple[bool, bool, bool]:
    stream = bool(optional(body, "stream", bool))
    options = optional(body, "stream_options", dict) or {}
    if options and not stream:
        raise ApiError(400, "Stream options can only be defined when `stream=True`.")
    return stream, bool(options.get("include_usage")), bool(options.get("continuous_usage_stats"))


def common_fields(body: dict[str, Any]) -> dict[str, Any]:
    stream, include_usage, continuous = stream_options(body)
    if optional(body, "n", int) not in (None, 1):
        raise ApiError(400, "The simulator serves one choice per request (n=1).", param="n")
    return {
        "model": optional(body, "model", str),
        "stream": stream,
        "include_usage": include_usage,
        "continuous_usage": continuous,
        "max_tokens": max_tokens_of(body),
        "seed": optional(body, "seed", int),
        "ignore_eos": bool(optional(body, "ignore_eos", bool)),
        "temperature": temperature_of(body),
        "return_token_ids": bool(optional(body, "return_token_ids", bool)),
    }


def temperature_of(body: dict[str, Any]) -> float | None:
    value = optional(body, "temperature", (int, float))
    return None if value is None else float(value)


def parse_chat(body: Any, tokenizer: Tokenizer) -> GenerationRequest:
    body = require_object(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' must be a non-empty list", param="messages")
    kwargs = optional(body, "chat_template_kwargs", dict) or {}
    try:
        text = render_chat(messages, continue_final=bool(body.get("continue_final_message")))
        instruction = last_user_text(messages)
    except TokenizerError as exc:
        raise ApiError(400, str(exc), param="messages") from exc
    effort = kwargs.get("reasoning_effort", body.get("reasoning_effort"))
    return GenerationRequest(
        endpoint="chat",
        prompt_tokens=tokenizer.encode(text),
        instruction=instruction,
        context_text=text,
        reasoning=kwargs.get("enable_thinking", kwargs.get("thinking", True)) is not False,
        reasoning_effort=effort_or_none(effort),
        response_format=optional(body, "response_format", dict),
        **common_fields(body),
    )


def parse_completion(body: Any, tokenizer: Tokenizer) -> GenerationRequest:
    body = require_object(body)
    prompt = body.get("prompt")
    try:
        if isinstance(prompt, str):
            tokens = tokenizer.encode(prompt)
        elif isinstance(prompt, list) and prompt and not isinstance(prompt[0], list | str):
            tokens = tokenizer.check_ids(prompt)
        else:
            raise ApiError(400, "'prompt' must be a string or a list of token ids", param="prompt")
        text = prompt if isinstance(prompt, str) else tokenizer.decode(tokens)
    except TokenizerError as exc:
        raise ApiError(400, str(exc), param="prompt") from exc
    return GenerationRequest(
        endpoint="completion",
        prompt_tokens=tokens,
        instruction=text,
        context_text=text,
        prompt_logprobs=unstreamed_prompt_logprobs(body),
        **common_fields(body),
    )


def unstreamed_prompt_logprobs(body: dict[str, Any]) -> int | None:
    """``prompt_logprobs``, refused with vLLM 0.32's words on a streamed request: its
    completion request's validator refuses any k but 0 when ``stream`` is set (no streamed
    chunk has a field for them), so a client never waits for them on the stream."""
    k: int | None = optional(body, "prompt_logprobs", int)
    if k is not None and body.get("stream") and (k > 0 or k == -1):
        raise ApiError(
            400,
            "1 validation error:\n  Value error, `prompt_logprobs` are not available when "
            "`stream=True`.",
            param="prompt_logprobs",
        )
    return k


def parse_tokenize(body: Any, tokenizer: Tokenizer) -> list[int]:
    body = require_object(body)
    try:
        if "messages" in body:
            text = render_chat(
                body["messages"] or [],
                add_generation_prompt=body.get("add_generation_prompt", True) is not False,
                continue_final=bool(body.get("continue_final_message")),
            )
        elif isinstance(body.get("prompt"), str):
            text = body["prompt"]
        else:
            raise ApiError(400, "Either 'prompt' (a string) or 'messages' is required")
    except TokenizerError as exc:
        raise ApiError(400, str(exc), param="messages") from exc
    return tokenizer.encode(text)


def context_error(limit: int, prompt: int) -> ApiError:
    return ApiError(
        400,
        f"This model's maximum context length is {limit} tokens. However, your request has "
        f"{prompt} input tokens. Please reduce the length of the input messages.",
    )


def max_tokens_error(limit: int, prompt: int, max_tokens: int) -> ApiError:
    return ApiError(
        400,
        f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's "
        f"maximum context length is {limit} tokens and your request has {prompt} input "
        f"tokens ({max_tokens} > {limit} - {prompt}).",
        param="max_tokens",
    )
