"""A loopback HTTP server that writes each whole answer in one ``write``.

A short streamed answer from a real vLLM often reaches the client in one socket
read: status line, headers and every SSE event (as uvicorn frames them: one HTTP
chunk per event). The events below are shaped exactly like vLLM 0.32's
``chat_stream.sse`` capture: a role chunk with empty content, one chunk per token,
``finish_reason`` on the last token chunk, a usage chunk with no choices, [DONE].
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

ID = "chatcmpl-9aafabe0124f2f5c"
HEAD = {"id": ID, "object": "chat.completion.chunk", "created": 1795969873, "model": "tiny-llama"}
TOKENS = [" 21", " 8669", " 6054"]
PROMPT_TOKENS = 19

Answer = Callable[[dict[str, Any]], list[dict[str, Any]]]  # request body -> SSE events


def vllm_events(tokens: list[str] = TOKENS, finish: str = "stop") -> list[dict[str, Any]]:
    role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}
    events = [HEAD | {"choices": [role | {"finish_reason": None}], "prompt_token_ids": None}]
    for n, token in enumerate(tokens, start=1):
        choice = {"index": 0, "delta": {"content": token}, "logprobs": None}
        if n < len(tokens):
            choice |= {"finish_reason": None, "token_ids": None}
        else:
            choice |= {"finish_reason": finish, "stop_reason": None, "token_ids": None}
        events.append(HEAD | {"choices": [choice]})
    usage = {"prompt_tokens": PROMPT_TOKENS, "total_tokens": PROMPT_TOKENS + len(tokens)}
    usage["completion_tokens"] = len(tokens)
    events.append(HEAD | {"choices": [], "usage": usage, "system_fingerprint": "vllm-0.32.0"})
    return events


def http_answer(events: list[dict[str, Any]]) -> bytes:
    """Status line, headers and a chunked SSE body ending with [DONE], as one buffer."""
    payloads = [json.dumps(e, separators=(",", ":")) for e in events] + ["[DONE]"]
    chunks = [f"data: {p}\n\n".encode() for p in payloads]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nserver: uvicorn\r\n"
    head += b"content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + body


class OneWriteServer:
    """Answers GET /health with an empty 200 and every POST with ``answer``'s events."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.answering = asyncio.Event()  # cleared: requests are read, then left unanswered
        self.answering.set()
        self.url = ""
        self.posts = 0
        self.received = asyncio.Event()  # set once a POST has been read
        self.writes: list[int] = []  # bytes of each whole answer, written at once
        self.received_ns: list[int] = []  # perf_counter_ns when each POST body was read

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                lines = head.decode().split("\r\n")
                fields = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
                body = await reader.readexactly(int(fields.get("content-length", "0")))
                received_ns = time.perf_counter_ns()
                if lines[0].startswith("GET"):
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    continue
                self.posts += 1
                self.received_ns.append(received_ns)
                self.received.set()
                await self.answering.wait()
                data = http_answer(self.answer(json.loads(body)))
                self.writes.append(len(data))
                writer.write(data)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed its keep-alive connection
        finally:
            writer.close()


@asynccontextmanager
async def one_write_server(
    answer: Answer = lambda _body: vllm_events(),
) -> AsyncIterator[OneWriteServer]:
    """A running :class:`OneWriteServer` on a free loopback port (``.url``)."""
    server = OneWriteServer(answer)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    async with listener:
        try:
            yield server
        finally:
            server.answering.set()  # held handlers finish, so the listener can close
