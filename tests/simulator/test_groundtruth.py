"""The ground-truth journal: server emit times of every chunk, against client arrivals."""

from __future__ import annotations

import asyncio
from pathlib import Path

from simulator.groundtruth import read_ground_truth
from simulator.launch import running
from tests.simulator.client import chat, post, stream


async def test_every_chunk_is_journaled_before_the_client_sees_it(tmp_path: Path, session) -> None:
    path = tmp_path / "truth.jsonl"
    opts = {"stream_options": {"include_usage": True}}
    with running("tiny", args=["--ground-truth", str(path)]) as sim:
        url = sim.url + "/v1/chat/completions"
        streamed = await asyncio.gather(
            *(stream(session, url, chat(f"q{i}", seed=i, **opts)) for i in range(3))
        )
        _, whole = await post(session, url, chat("whole", max_tokens=5))
    records = read_ground_truth(path)
    assert len(records) == 4 and records[whole["id"]]["chunks"][0][0] == "response"
    for result in streamed:
        record = records[result.chunks[0]["id"]]
        kinds = [chunk[0] for chunk in record["chunks"]]
        assert kinds[0] == "role" and kinds[-2:] == ["usage", "done"]
        assert len(record["chunks"]) == len(result.events)
        assert sum(chunk[3] for chunk in record["chunks"]) == result.usage["completion_tokens"]
        assert record["completion_tokens"] == result.usage["completion_tokens"]
        for (_kind, perf_ns, _wall_ns, _tokens), event in zip(
            record["chunks"], result.events, strict=True
        ):
            assert 0 <= event.arrival_ns - perf_ns < 50_000_000  # one clock, loopback delay
        offsets = [wall - perf for _k, perf, wall, _t in record["chunks"]]
        assert max(offsets) - min(offsets) < 5_000_000  # wall and monotonic taken together
