"""How long `faceoff --help` and `faceoff version` take, against a bare Python start.

    .venv/bin/python -m benchmarks.cli_startup [--rounds 15]

Each round runs, in alternating order, `python -c pass` (the peer: the interpreter's own
start on this host), `python -m flows --help` and `python -m flows version`, each in a
fresh process. Printed: the median wall time of each and its ratio to the bare start.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "faceoff --help": [sys.executable, "-m", "flows", "--help"],
    "faceoff version": [sys.executable, "-m", "flows", "version"],
}


def wall_s(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    names = list(COMMANDS)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else reversed(names):
            times[name].append(wall_s(COMMANDS[name]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    times = measure(parser.parse_args().rounds)
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':<18} {'median s':>9} {'× bare':>7}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<18} {median:>9.3f} {median / bare:>7.1f}")


if __name__ == "__main__":
    main()
