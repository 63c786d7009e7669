"""What a spinning client's look between callbacks costs: `WakeSelector.refresh` (an
edge-triggered epoll of the stamped sockets) against a look through the loop's own selector.

    .venv/bin/python -m benchmarks.refresh_cost [--sockets 32] [--looks 20000]

`--sockets` loopback connections, each stamped. Timed per look, in µs (median of 5 runs):
the refresh with no new segment, and with one socket's segment to note (its `FIONREAD`
and the clock reading); the loop's own selector (`select(0)`, level-triggered), which
answers every socket that holds unread bytes at every look, with none and with all of
them holding bytes (as at C32 while the loop parses one stream and 31 wait); and per
callback run by an asyncio loop whose selector is a `WakeSelector`, sleeping and
spinning (`RefreshingReady`: the refresh before each callback; no request in flight, so
neither polls).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import selectors
import socket
import statistics
import time
import timeit
from collections.abc import Callable, Iterator

from workload.rx_stamps import SO_TIMESTAMPNS, WakeSelector, set_receive

RUNS = 5


@contextlib.contextmanager
def connections(n: int) -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    """``n`` (writer, stamped reader) loopback pairs."""
    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(socket.create_server(("127.0.0.1", 0)))
        pairs = []
        for _ in range(n):
            reader = stack.enter_context(socket.create_connection(listener.getsockname()))
            writer = stack.enter_context(listener.accept()[0])
            reader.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            reader.setblocking(False)
            pairs.append((writer, reader))
        yield pairs


def per_look_us(look: Callable[[], object], looks: int, before: Callable[[], object]) -> float:
    """Median µs per call of ``look`` over ``RUNS`` runs, ``before`` run ahead of each call."""

    def timed() -> float:
        total = 0
        for _ in range(looks):
            before()
            start = time.perf_counter_ns()
            look()
            total += time.perf_counter_ns() - start
        return total / looks / 1000

    return statistics.median(timed() for _ in range(RUNS))


def per_callback_us(spin: bool, looks: int) -> float:
    """Median µs per ``call_soon`` callback run by a loop, spinning or not."""
    loop = asyncio.SelectorEventLoop()
    with contextlib.closing(loop):
        set_receive(loop, time.perf_counter_ns, "spin" if spin else "sleep")

        async def chain() -> None:
            done = loop.create_future()
            left = [looks]

            def step() -> None:
                left[0] -= 1
                loop.call_soon(step) if left[0] else done.set_result(None)

            loop.call_soon(step)
            await done

        return statistics.median(
            timeit.timeit(lambda: loop.run_until_complete(chain()), number=1) / looks * 1e6
            for _ in range(RUNS)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sockets", type=int, default=32)
    parser.add_argument("--looks", type=int, default=20000)
    args = parser.parse_args()
    with connections(args.sockets) as pairs, selectors.DefaultSelector() as own:
        wakes = WakeSelector(own, time.perf_counter_ns)
        wakes.set_spin(True)
        for _, reader in pairs:
            own.register(reader, selectors.EVENT_READ)
            wakes.stamp(reader.fileno())
        writer, reader = pairs[0]

        def segment() -> None:  # one new segment, its wake-up not yet noted
            with contextlib.suppress(BlockingIOError):
                reader.recv(1 << 16)
            writer.send(b"x")
            wakes.woke.clear()

        rows = {
            "refresh, nothing new": per_look_us(wakes.refresh, args.looks, lambda: None),
            "refresh, one new segment": per_look_us(wakes.refresh, args.looks, segment),
        }
        rows["own selector, none holding bytes"] = per_look_us(
            lambda: own.select(0), args.looks, lambda: None
        )
        for writer, _ in pairs:
            writer.send(b"x")
        rows[f"own selector, {args.sockets} holding bytes"] = per_look_us(
            lambda: own.select(0), args.looks, lambda: None
        )
        wakes.set_spin(False)
    rows["loop callback, sleeping"] = per_callback_us(False, args.looks)
    rows["loop callback, spinning (refresh first)"] = per_callback_us(True, args.looks)
    for label, us in rows.items():
        print(f"{label:42} {us:7.2f} µs")
    print(f"{args.sockets} stamped loopback sockets; median of {RUNS} runs of {args.looks}")


if __name__ == "__main__":
    main()
