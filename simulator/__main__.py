"""``python -m simulator``: the simulator's entry point (the image's ENTRYPOINT too).

    python -m simulator --profile exl3-r11 --port 8000 [--host 127.0.0.1]
        [--time-scale 20] [--served-model-name NAME] [--model-path /models/x]
        [--ground-truth PATH] [--legacy-names] [--reasoning-field reasoning_content]
        [--fault key=value ...] [--set section.key=value ...] [--gpus N]

The only module that prints or exits. Exit codes: 0 after SIGTERM/SIGINT, 2 for a
bad profile or option, the configured code for the crash fault, 137 (SIGKILL)
for the OOM fault.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

from simulator.profile import (
    Profile,
    ProfileError,
    bundled_profiles,
    load_profile,
    with_overrides,
)
from simulator.server import ServerConfig, serve


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simulator", description="A vLLM-compatible engine simulator."
    )
    add = parser.add_argument
    add("--profile", default="tiny", help=f"bundled ({', '.join(bundled_profiles())}) or a path")
    add("--host", default="127.0.0.1")
    add("--port", type=int, default=8000, help="0 picks a free port (named in the boot log)")
    add("--time-scale", type=float, default=1.0, help="run every simulated duration N× faster")
    add("--served-model-name", help="the model id /v1/models reports")
    add("--model-path", help="the model root /v1/models and the boot log report")
    add("--ground-truth", type=Path, help="journal every emitted chunk's times to this file")
    add("--legacy-names", action="store_true", help="expose pre-V1 metric names")
    add("--reasoning-field", choices=("reasoning", "reasoning_content"))
    add(
        "--max-model-len",
        type=int,
        help="vLLM's flag: the context, in tokens (model.max_model_len)",
    )
    add("--fault", action="append", default=[], metavar="KEY=VALUE", help="set a [faults] key")
    add("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override a key")
    add("--gpus", type=int, default=0, help="virtual GPUs (GET /_sim/gpu); 0: the profile's TP")
    return parser.parse_args(argv)


def build_profile(args: argparse.Namespace) -> Profile:
    assignments = list(args.set) + [f"faults.{f}" for f in args.fault]
    if args.legacy_names:
        assignments.append("legacy_names=true")
    if args.reasoning_field:
        assignments.append(f"output.reasoning_field={args.reasoning_field}")
    if args.max_model_len is not None:
        assignments.append(f"model.max_model_len={args.max_model_len}")
    profile = load_profile(args.profile)
    return with_overrides(profile, assignments, where="command-line options")


def die(kind: str, code: int) -> NoReturn:
    """The crash and OOM faults end the process at once, as the real failures would."""
    sys.stdout.flush()
    if kind == "oom":
        # PID 1 of a container cannot SIGKILL itself; exit with the status Docker would show
        if os.getpid() == 1:
            os._exit(128 + signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    print("ERROR EngineCore encountered a fatal error (injected crash fault).", flush=True)
    os._exit(code)


def emit(line: str) -> None:
    print(line, flush=True)


async def run(config: ServerConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(config, emit=emit, on_fatal=die, stop=stop)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.time_scale <= 0:
        print("error: --time-scale must be positive", file=sys.stderr)
        return 2
    if args.gpus < 0:
        print(
            "error: --gpus must be 0 (the profile's tensor parallel size) or more", file=sys.stderr
        )
        return 2
    try:
        profile = build_profile(args)
    except ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = ServerConfig(
        profile=profile,
        host=args.host,
        port=args.port,
        time_scale=args.time_scale,
        served_model_name=args.served_model_name,
        model_path=args.model_path,
        ground_truth=args.ground_truth,
        gpus=args.gpus,
    )
    try:
        asyncio.run(run(config))
    except OSError as exc:  # e.g. the port is taken
        print(f"error: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
