"""Starting the simulator from the command line: ``faceoff sim`` and ``python -m simulator``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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
