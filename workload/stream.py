"""Server-sent events of a streamed chat completion, reduced to what the journal keeps.

Pure: bytes and their arrival times in, timestamps and counts out. The client
feeds every read; tests feed hand-built event sequences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

from faceoff.formats.attempt.journal import Usage

DONE = b"[DONE]"


class StreamProtocolError(Exception):
    """The byte stream is not the SSE a chat completion sends."""


class SseFramer:
    """Splits a byte stream into the data payloads of its events.

    Each payload comes with the stream offset just past its terminating blank line,
    so that the caller can date the event by the socket read that delivered it.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._base = 0  # stream offset of _buffer[0]

    def feed(self, data: bytes) -> list[tuple[bytes, int]]:
        buffer = self._buffer + data
        crlf = b"\r" in buffer
        events, start = [], 0
        while (found := _terminator(buffer, start, crlf)) is not None:
            end, gap = found
            payload = _data_of(buffer[start:end], crlf)
            start = end + gap
            if payload is not None:
                events.append((payload, self._base + start))
        self._base += start
        self._buffer = buffer[start:]
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an event that has not been terminated yet."""
        return self._buffer


def _terminator(buffer: bytes, start: int, crlf: bool) -> tuple[int, int] | None:
    """(index, length) of the first blank line at or after ``start``."""
    lf = buffer.find(b"\n\n", start)
    if crlf:
        cr = buffer.find(b"\r\n\r\n", start)
        if cr >= 0 and (lf < 0 or cr < lf):
            return cr, 4
    return (lf, 2) if lf >= 0 else None


def _data_of(block: bytes, crlf: bool) -> bytes | None:
    lines = block.split(b"\r\n" if crlf and b"\r\n" in block else b"\n")
    data = [line[5:].removeprefix(b" ") for line in lines if line[:5] == b"data:"]
    return b"\n".join(data) if data else None


@dataclass
class StreamState:
    """What a chat-completion stream has said so far, with arrival times (perf_counter_ns)."""

    events: int = 0
    first_event_ns: int | None = None
    usage_ns: int | None = None
    done_ns: int | None = None
    response_id: str | None = None
    first_output_ns: int | None = None
    first_content_ns: int | None = None
    last_token_ns: int | None = None
    chunk_ns: list[int] = field(default_factory=list)
    chunk_kinds: list[str] = field(default_factory=list)
    chunk_stamps: list[str] = field(default_factory=list)  # how each chunk's time was dated
    content: list[str] = field(default_factory=list)
    reasoning_chars: int = 0
    finish_reason: str | None = None
    usage: Usage | None = None
    refusal: bool = False
    error: str | None = None

    def observe(self, payload: bytes, t_ns: int, stamp: str = "r") -> None:
        """Take one event's data payload that arrived at ``t_ns``, dated as ``stamp`` says
        (``workload.transport.STAMP_LETTERS``; r: the read's clock)."""
        self.events += 1
        if self.first_event_ns is None:
            self.first_event_ns = t_ns
        if payload == DONE:
            self.done_ns = t_ns
            return
        try:
            event = from_json(payload)  # a third of json.loads' CPU, read after read
        except ValueError as exc:
            raise StreamProtocolError(f"event is not JSON: {payload[:200]!r}") from exc
        if not isinstance(event, dict):
            raise StreamProtocolError(f"event is not a JSON object: {payload[:200]!r}")
        if self.response_id is None and isinstance(event.get("id"), str):
            self.response_id = event["id"]
        if "error" in event:
            self.error = _error_text(event["error"])
        if event.get("usage"):
            self.usage, self.usage_ns = _usage(event["usage"]), t_ns
        for choice in event.get("choices") or ():
            self._choice(choice, t_ns, stamp)

    def _choice(self, choice: dict[str, Any], t_ns: int, stamp: str) -> None:
        delta = choice.get("delta") or {}
        # vLLM >= 0.10 names it `reasoning`; older servers `reasoning_content`. Never both counted.
        reasoning = delta.get("reasoning") or delta.get("reasoning_content") or ""
        content = delta.get("content") or ""
        if delta.get("refusal") or choice.get("finish_reason") == "content_filter":
            self.refusal = True
        if choice.get("finish_reason") is not None:
            self.finish_reason = choice["finish_reason"]
        if reasoning or content:
            self._token_chunk(reasoning, content, t_ns, stamp)

    def _token_chunk(self, reasoning: str, content: str, t_ns: int, stamp: str) -> None:
        if self.first_output_ns is None:
            self.first_output_ns = t_ns
        if content and self.first_content_ns is None:
            self.first_content_ns = t_ns
        self.last_token_ns = t_ns
        self.chunk_ns.append(t_ns)
        self.chunk_kinds.append("b" if reasoning and content else "c" if content else "r")
        self.chunk_stamps.append(stamp)
        self.reasoning_chars += len(reasoning)
        if content:
            self.content.append(content)

    @property
    def done(self) -> bool:
        """Whether ``data: [DONE]`` has arrived."""
        return self.done_ns is not None

    @property
    def text(self) -> str:
        return "".join(self.content)


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("completion_tokens_details") or {}
    try:
        return Usage(
            prompt_tokens=raw["prompt_tokens"],
            completion_tokens=raw["completion_tokens"],
            reasoning_tokens=details.get("reasoning_tokens"),
        )
    except (KeyError, ValueError) as exc:
        raise StreamProtocolError(f"usage chunk is malformed: {raw!r}") from exc


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
