"""A minimal OpenAI-compatible streaming server that knows the truth about its own timing.

    python -m benchmarks.truth_server --port 8931 --rate 100 --log truth.jsonl
        [--no-finish-reason]

Independent of faceoff on purpose (standard library only, raw asyncio streams, no
aiohttp, none of the simulator): what a client under test measures is compared with
what this server did, so the server must share no code with the client. It answers
`GET /v1/models`, `POST /tokenize` (one token per word), and streaming
`POST /v1/completions` and `/v1/chat/completions` in vLLM 0.32's chunk shapes
(shared/reference/vllm-0.32/chat_stream.sse), over HTTP/1.1 keep-alive with chunked
transfer encoding.

Each streamed request gets a serial. The serial is the response id
(`cmpl-truth-<serial>`) and the first content chunk's text (`s<serial>`), so a client
that keeps either the id or the generated text is matched with the server's record.
The server records, in `time.perf_counter_ns()`, when each request *arrived*: the
kernel's receive stamp of the read that completed its body (`SO_TIMESTAMPNS`, read with
`recvmsg`), so that a server busy writing other streams does not shorten its own
durations by reading a request late; where the kernel gives no stamp, when the body
was read (`read_ns`, recorded too). Tokens are paced at `--rate` per stream from the
arrival (plus `--prefill-ms`), and the server records right after each content chunk
was handed to the socket. The records are written, one JSON line per request, to
`--log` as each request ends.

By default the last content chunk carries `finish_reason` "length", as vLLM sends it;
with `--no-finish-reason` no chunk names one (null throughout): the stream ends with
usage and `[DONE]` only, as some OpenAI-compatible servers end it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

VOCAB = 32000
MAX_MODEL_LEN = 1_000_000
SO_TIMESTAMPNS = 35  # Linux; the socket module does not name it
TIMESPEC = struct.Struct("@qq")


@dataclass
class Truth:
    """What the server did for one streamed request, in perf_counter_ns."""

    serial: int
    arrival_ns: int  # the kernel's receive stamp of the body's last read, else read_ns
    read_ns: int  # when the body had been read
    chunks_ns: list[int] = field(default_factory=list)

    def line(self) -> str:
        return json.dumps(
            {
                "serial": self.serial,
                "arrival_ns": self.arrival_ns,
                "read_ns": self.read_ns,
                "chunks_ns": self.chunks_ns,
            }
        )


@dataclass
class Server:
    model: str
    rate: float
    prefill_ms: float
    log: TextIO
    finish_reason: bool = True
    serials: int = 0

    def next_serial(self) -> int:
        self.serials += 1
        return self.serials


def words_of(body: dict[str, Any]) -> list[str]:
    if "messages" in body:
        return " ".join(str(m.get("content") or "") for m in body["messages"]).split()
    prompt = body.get("prompt") or ""
    return (prompt if isinstance(prompt, str) else " ".join(map(str, prompt))).split()


def token_ids(words: list[str]) -> list[int]:
    return [zlib.crc32(w.encode()) % VOCAB for w in words]


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, Any]] | None:
    """(method, path, JSON body) of the next request on the connection; None when it closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    size = int(headers.get("content-length") or 0)
    raw = await reader.readexactly(size) if size else b""
    return method, path, json.loads(raw) if raw else {}


def respond(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    writer.write(
        f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def event(payload: dict[str, Any] | str) -> bytes:
    """One SSE event as one HTTP chunk."""
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    text = f"data: {data}\n\n".encode()
    return f"{len(text):x}\r\n".encode() + text + b"\r\n"


def chunk(
    server: Server, chat: bool, serial: int, text: str, finish: str | None, *, role: bool = False
) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
    if chat:
        choice["delta"] = {"role": "assistant", "content": text} if role else {"content": text}
    else:
        choice["text"] = text
    kind = "chat.completion.chunk" if chat else "text_completion"
    return event(
        {
            "id": f"cmpl-truth-{serial}",
            "object": kind,
            "created": int(time.time()),
            "model": server.model,
            "choices": [choice],
        }
    )


async def stream(
    server: Server, writer: asyncio.StreamWriter, body: dict[str, Any], read: Read, chat: bool
) -> None:
    truth = Truth(server.next_serial(), read.arrival_ns, read.read_ns)
    arrival = truth.arrival_ns
    tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
    prompt_tokens = len(words_of(body))
    step_ns = int(1e9 / server.rate)
    first_due = arrival + int(server.prefill_ms * 1e6)
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    if chat:  # vLLM's first chat chunk: the role, no content
        writer.write(chunk(server, chat, truth.serial, "", None, role=True))
    for i in range(tokens):
        delay = first_due + i * step_ns - time.perf_counter_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        text = f"s{truth.serial}" if i == 0 else " tok"
        finish = "length" if i == tokens - 1 and server.finish_reason else None
        writer.write(chunk(server, chat, truth.serial, text, finish))
        await writer.drain()
        truth.chunks_ns.append(time.perf_counter_ns())
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens}
    usage["total_tokens"] = prompt_tokens + tokens
    writer.write(event({"id": f"cmpl-truth-{truth.serial}", "choices": [], "usage": usage}))
    writer.write(event("[DONE]") + b"0\r\n\r\n")
    await writer.drain()
    server.log.write(truth.line() + "\n")
    server.log.flush()


@dataclass(frozen=True)
class Read:
    arrival_ns: int
    read_ns: int


class KernelStamped:
    """The connection's socket as asyncio's transport reads it: ``recv`` is a ``recvmsg``
    that keeps when the read's last packet arrived, by the kernel's stamp, on
    perf_counter_ns (the stamp is real time: less the wait since, from the clock now)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.arrived_ns: int | None = None

    def recv(self, size: int) -> bytes:
        data, ancillary, _, _ = self._sock.recvmsg(size, socket.CMSG_SPACE(TIMESPEC.size))
        # real time first: a pause between the two readings makes the arrival late, not early
        real_ns, now_ns = time.time_ns(), time.perf_counter_ns()
        self.arrived_ns = None
        for level, kind, stamp in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = TIMESPEC.unpack_from(stamp)
                self.arrived_ns = now_ns - max(0, real_ns - seconds * 10**9 - nanoseconds)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def kernel_stamped(writer: asyncio.StreamWriter) -> KernelStamped | None:
    """Swap the transport's socket for a :class:`KernelStamped` one, where it has one."""
    transport = writer.transport
    sock = getattr(transport, "_sock", None)  # asyncio's selector transport
    if type(sock) is not socket.socket:
        return None
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    stamped = KernelStamped(sock)
    transport._sock = stamped  # type: ignore[attr-defined]
    return stamped


async def serve_connection(
    server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    stamped = kernel_stamped(writer)
    try:
        while (request := await read_request(reader)) is not None:
            read_ns = time.perf_counter_ns()
            arrived_ns = stamped.arrived_ns if stamped is not None else None
            read = Read(arrived_ns if arrived_ns is not None else read_ns, read_ns)
            method, path, body = request
            path = path.split("?", 1)[0]
            if method == "GET" and path == "/v1/models":
                model = {"id": server.model, "object": "model", "max_model_len": MAX_MODEL_LEN}
                respond(writer, 200, {"object": "list", "data": [model]})
            elif method == "GET" and path == "/health":
                respond(writer, 200, {})
            elif method == "POST" and path == "/tokenize":
                ids = token_ids(words_of(body))
                respond(
                    writer, 200, {"count": len(ids), "max_model_len": MAX_MODEL_LEN, "tokens": ids}
                )
            elif method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
                await stream(server, writer, body, read, chat="chat" in path)
            else:
                respond(writer, 404, {"error": f"no route {method} {path}"})
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def serve(server: Server, host: str, port: int) -> None:
    listener = await asyncio.start_server(
        lambda r, w: serve_connection(server, r, w), host, port, backlog=1024
    )
    print(f"truth server on http://{host}:{port}", flush=True)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="truth")
    parser.add_argument("--rate", type=float, default=100.0, help="tokens/s per stream")
    parser.add_argument("--prefill-ms", type=float, default=20.0)
    parser.add_argument("--log", required=True, help="JSON lines, one per streamed request")
    parser.add_argument(
        "--no-finish-reason", action="store_true", help="end streams with usage and [DONE] only"
    )
    args = parser.parse_args()
    with Path(args.log).open("a") as log:
        server = Server(args.model, args.rate, args.prefill_ms, log, not args.no_finish_reason)
        asyncio.run(serve(server, args.host, args.port))


if __name__ == "__main__":
    main()
