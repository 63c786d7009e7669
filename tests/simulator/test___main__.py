"""Starting the simulator from the command line: ``faceoff sim`` and ``python -m simulator``,
and the simulator lane image, whose entry point is ``python -m simulator``: pulled by digest
from the local registry, on the real daemon.

The image carries Debian bookworm's Python 3.11.2, aiohttp 3.8.4 and prometheus_client
0.16.0, so its tests also hold the simulator to those versions' APIs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulator.launch import health
from tests.conftest import free_port

FACEOFF = str(Path(sys.executable).parent / "faceoff")


def test_faceoff_sim_serves_in_the_foreground_until_sigterm() -> None:
    port = free_port()
    command = [
        FACEOFF,
        "sim",
        "--profile",
        "tiny",
        "--port",
        str(port),
        "--time-scale",
        "2",
        "--served-model-name",
        "demo",
        "--fault",
        "error_rate=0",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while health(url) != 200:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with urllib.request.urlopen(url + "/v1/models") as response:
            assert json.load(response)["data"][0]["id"] == "demo"
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=10)
    assert process.returncode == 0
    assert (
        "quantization=None" in out.decode() and "GPU KV cache size: 32,768 tokens" in out.decode()
    )


def test_bad_options_exit_2_with_the_reason() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "simulator", "--profile", "nope"], capture_output=True, text=True
    )
    assert run.returncode == 2 and "Bundled profiles" in run.stderr and "tiny" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "simulator", "--fault", "errors=1"], capture_output=True, text=True
    )
    assert run.returncode == 2 and "unknown key(s) ['errors']" in run.stderr


def call(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read().decode()
        is_json = response.headers.get_content_type() == "application/json"
    return json.loads(raw) if is_json else raw


def hang_up_mid_stream(url: str) -> None:
    body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 400, "stream": True}
    request = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.readline()


def start(docker_client, sim_image: str, *args: str):  # type: ignore[no-untyped-def]
    repo, digest = sim_image.split("@")
    docker_client.images.pull(repo, tag=digest)
    port = free_port()
    command = ["--profile", "tiny", "--port", str(port), "--time-scale", "4", *args]
    container = docker_client.containers.run(
        sim_image, command=command, network_mode="host", detach=True
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while health(url) != 200:
        container.reload()
        assert container.status != "exited", container.logs().decode()[-2000:]
        assert time.monotonic() < deadline, "the container never became healthy"
        time.sleep(0.2)
    return container, url


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_image_runs_by_digest_and_serves_like_vllm(docker_client, sim_image: str) -> None:  # type: ignore[no-untyped-def]
    container, url = start(docker_client, sim_image, "--model-path", "/models/x")
    try:
        models = call(url + "/v1/models")
        assert models["data"][0]["root"] == "/models/x"
        messages = [{"role": "user", "content": "Hello from the container"}]
        counted = call(url + "/tokenize", {"messages": messages})["count"]
        whole = call(url + "/v1/chat/completions", {"messages": messages, "max_tokens": 8})
        assert whole["usage"]["prompt_tokens"] == counted
        options = {"stream": True, "stream_options": {"include_usage": True}}
        streamed = call(
            url + "/v1/chat/completions", {"messages": messages, "max_tokens": 8, **options}
        )
        assert streamed.rstrip().endswith("data: [DONE]") and '"completion_tokens":8' in streamed
        names = {f.name for f in text_string_to_metric_families(call(url + "/metrics"))}
        assert {"vllm:prompt_tokens", "vllm:kv_cache_usage_perc"} <= names
        hang_up_mid_stream(url)
        time.sleep(0.5)
        assert 'finished_reason="abort",model_name="sim-tiny"} 1.0' in call(url + "/metrics")
        container.stop(timeout=10)
        assert container.wait(timeout=30)["StatusCode"] == 0
        logs = container.logs().decode()
        assert "quantization=None" in logs and "GPU KV cache size: 32,768 tokens" in logs
    finally:
        container.remove(force=True)


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_oom_fault_shows_as_exit_code_137(docker_client, sim_image: str) -> None:  # type: ignore[no-untyped-def]
    container, url = start(docker_client, sim_image, "--fault", "oom_after_requests=1")
    try:
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        call(url + "/v1/chat/completions", body)
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            call(url + "/v1/chat/completions", body)
        assert container.wait(timeout=30)["StatusCode"] == 137
    finally:
        container.remove(force=True)
