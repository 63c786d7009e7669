"""Converting kernel receive stamps onto the client's clock: which order of clock readings
can date a read before its bytes were sent.

    .venv/bin/python -m benchmarks.stamp_order [--reads 20000]

One loopback connection; each read is one byte sent right after a perf_counter_ns reading,
so its true arrival is after that reading. Reads alternate between two conversions of the
kernel's real-time stamp: the client's clock read first, then real time (faceoff before),
and `workload.rx_stamps.kernel_arrival` (real time first, a pair split by a pause read
again). Another Python thread spins throughout, as the journal's writer thread wants the
GIL while it serialises lines, and the switch interval is the client's (0.5 ms). Printed:
how many reads each dated before their send, and the worst by how much.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from collections.abc import Callable

from workload.cell_client import GIL_SWITCH_INTERVAL_S
from workload.rx_stamps import SO_TIMESTAMPNS, STAMP_SPACE, kernel_arrival, waited_ns

Ancillary = list[tuple[int, int, bytes]]


def clock_first(ancillary: Ancillary) -> int | None:
    now_ns, waited = time.perf_counter_ns(), waited_ns(ancillary, time.time_ns())
    return None if waited is None else now_ns - waited


def real_first(ancillary: Ancillary) -> int | None:
    return kernel_arrival(ancillary, time.perf_counter_ns)


CONVERSIONS: dict[str, Callable[[Ancillary], int | None]] = {
    "clock, then real time (before)": clock_first,
    "real time first (kernel_arrival)": real_first,
}


def measure(reads: int) -> dict[str, list[int]]:
    """Per conversion: by how many ns each read it dated before its send was."""
    early: dict[str, list[int]] = {name: [] for name in CONVERSIONS}
    names = list(CONVERSIONS)
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()) as client,
    ):
        client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        server, _ = listener.accept()
        with server:
            for i in range(len(names) * reads):
                name = names[i % len(names)]
                sent_ns = time.perf_counter_ns()
                server.send(b"x")
                _, ancillary, _, _ = client.recvmsg(16, STAMP_SPACE)
                dated = CONVERSIONS[name](ancillary)
                if dated is not None and dated < sent_ns:
                    early[name].append(sent_ns - dated)
    return early


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reads", type=int, default=20_000, help="per conversion")
    args = parser.parse_args()
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    spinning = threading.Event()
    spinning.set()

    def spin() -> None:  # another thread wanting the GIL
        while spinning.is_set():
            pass

    threading.Thread(target=spin, daemon=True).start()
    try:
        early = measure(args.reads)
    finally:
        spinning.clear()
    for name, gaps in early.items():
        worst = max(gaps, default=0) / 1000
        said = f"{len(gaps)} of {args.reads} reads dated before their send"
        print(f"{name}: {said}; worst {worst:.2f} µs")
    print(f"load avg {os.getloadavg()[0]:.1f}; host cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
