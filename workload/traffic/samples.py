"""Small sample traffic files, generated deterministically: what ``matrix/examples/data`` ships.

``python -m workload.traffic.samples matrix/examples/data`` writes them again, byte for byte:

- ``mooncake-1000.jsonl``: 1,000 Mooncake-format records (``timestamp`` ms,
  ``input_length``, ``output_length``, ``hash_ids`` of 512-token blocks): Poisson arrivals
  at 1 request/s; each request opens with one of a few shared system prompts (Zipf-weighted)
  or continues an earlier conversation (its whole prompt, then new blocks), as Mooncake's
  conversation trace does, so about half of its prompt tokens were computed before;
- ``azure-200.csv``: 200 rows in the Azure LLM inference trace's columns;
- ``sharegpt-50.json``, ``chat-50.jsonl``, ``prompts-50.jsonl``: 50 rows of each dataset
  format, some sharing a system prompt, some giving ``output_tokens``.

The text is filler from ``workload.text``: these files exercise the formats and the reuse,
they are not anyone's traffic.
"""

from __future__ import annotations

import csv
import io
import json
import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from workload.text import prose

SEED = 20260315
AZURE_START = datetime(2023, 11, 16, 18, 15, 46, tzinfo=UTC)


@dataclass(frozen=True)
class TraceShape:
    """The knobs of a generated Mooncake trace."""

    requests: int = 1000
    rate_rps: float = 1.0  # mean arrival rate, recorded time
    block_tokens: int = 512
    systems: int = 6  # shared system prompts
    system_blocks: tuple[int, int] = (1, 3)
    new_blocks: tuple[int, int] = (1, 3)  # blocks each request adds of its own
    max_blocks: int = 12  # a conversation that would grow past this starts anew
    follow: float = 0.45  # share of requests that continue an earlier conversation
    output_tokens: tuple[int, int] = (16, 128)
    seed: int = SEED


def mooncake_trace(shape: TraceShape) -> list[dict[str, Any]]:
    """The records of a Mooncake-format trace of ``shape``, in time order."""
    rng, ids = random.Random(shape.seed), iter(range(10**9))
    systems = [_fresh(ids, rng.randint(*shape.system_blocks)) for _ in range(shape.systems)]
    weights = [1 / (k + 1) for k in range(shape.systems)]  # Zipf: a few prompts dominate
    conversations: list[list[int]] = []
    records, at_ms = [], 0.0
    for _ in range(shape.requests):
        blocks = _blocks(rng, ids, shape, conversations, rng.choices(systems, weights)[0])
        length = (len(blocks) - 1) * shape.block_tokens + rng.randint(1, shape.block_tokens)
        records.append({"timestamp": round(at_ms), "input_length": length,
                        "output_length": rng.randint(*shape.output_tokens),
                        "hash_ids": blocks})  # fmt: skip
        at_ms += rng.expovariate(shape.rate_rps) * 1000.0
    return records


def _fresh(ids: Any, count: int) -> list[int]:
    return [next(ids) for _ in range(count)]


def _blocks(
    rng: random.Random,
    ids: Any,
    shape: TraceShape,
    conversations: list[list[int]],
    system: list[int],
) -> list[int]:
    """A request's block ids: a conversation continued, or a new one on a system prompt."""
    added = _fresh(ids, rng.randint(*shape.new_blocks))
    if conversations and rng.random() < shape.follow:
        turn = rng.randrange(len(conversations))
        grown = conversations[turn] + added
        if len(grown) <= shape.max_blocks:
            conversations[turn] = grown
            return grown
    started = (system + added)[: shape.max_blocks]
    conversations.append(started)
    return started


def azure_trace(rows: int = 200, seed: int = SEED) -> str:
    """CSV text with the Azure LLM inference trace's columns, Poisson arrivals at 2 req/s."""
    rng, out = random.Random(seed), io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
    at = AZURE_START
    for _ in range(rows):
        stamp = at.strftime("%Y-%m-%d %H:%M:%S.%f") + "0"  # the trace's seven digits
        writer.writerow([stamp, rng.randint(64, 4096), rng.randint(16, 256)])
        at += timedelta(seconds=rng.expovariate(2.0))
    return out.getvalue()


def conversations(count: int = 50, seed: int = SEED) -> list[list[tuple[str, str]]]:
    """``count`` conversations of (role, text): a third share a system prompt, some run
    two user turns, each ends with the assistant's answer."""
    rng = random.Random(seed)
    system = ("system", "You answer questions about the reference notes. " + prose(40, seed))
    found = []
    for index in range(count):
        turns = [system] if index % 3 == 0 else []
        for turn in range(rng.randint(1, 2)):
            question = prose(rng.randint(20, 300), seed, index, turn)
            turns.append(("user", f"Question {index}.{turn}: {question}"))
            turns.append(("assistant", prose(rng.randint(10, 120), seed, index, turn, "a")))
        found.append(turns)
    return found


def sharegpt(rows: list[list[tuple[str, str]]]) -> str:
    speaker = {"system": "system", "user": "human", "assistant": "gpt"}
    items = [
        {"id": f"sample-{i}", "conversations": [{"from": speaker[r], "value": t} for r, t in turns]}
        for i, turns in enumerate(rows)
    ]
    return json.dumps(items, indent=1) + "\n"


def chat_lines(rows: list[list[tuple[str, str]]]) -> str:
    lines = []
    for index, turns in enumerate(rows):
        line: dict[str, Any] = {"messages": [{"role": r, "content": t} for r, t in turns]}
        if index % 4 == 1:  # a given length wins over the answer's
            line["output_tokens"] = 32 + index
        lines.append(json.dumps(line))
    return "\n".join(lines) + "\n"


def prompt_lines(rows: list[list[tuple[str, str]]]) -> str:
    lines = []
    for index, turns in enumerate(rows):
        prompt = next(t for r, t in turns if r == "user")
        lines.append(json.dumps({"prompt": prompt, "output_tokens": 16 + 3 * index}))
    return "\n".join(lines) + "\n"


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write_samples(folder: Path) -> list[Path]:
    rows = conversations()
    files = {
        "mooncake-1000.jsonl": jsonl(mooncake_trace(TraceShape())),
        "azure-200.csv": azure_trace(),
        "sharegpt-50.json": sharegpt(rows),
        "chat-50.jsonl": chat_lines(rows),
        "prompts-50.jsonl": prompt_lines(rows),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in files]


if __name__ == "__main__":
    for path in write_samples(Path(sys.argv[1] if len(sys.argv) > 1 else "matrix/examples/data")):
        print(path)
