"""The command line a person runs an engine with today, read for ``faceoff init``: what
comes before ``vllm serve`` (``NAME=VALUE`` assignments, ``env``), or a ``docker run …``
around it. Pure; ``matrix.toml.starter`` reads the serve line itself.

Nothing is dropped unsaid: an assignment becomes the arm's ``[arms.env]`` (a secret's
name its ``[arms.secrets]``, the value left to the operator's environment); ``docker run``'s
image, ``-v`` mounts, ``-e`` variables, ``--gpus "device=…"``, ``--shm-size`` and
``--memory`` become the arm's fields, and every option faceoff does itself (the host
network and IPC, a name, ``--rm``) is named in a note. A launcher faceoff cannot read (an
SGLang server) is refused with the way to write its arm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from matrix.secrets import secret_name

ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$", re.S)
DOCKERS = ("docker", "podman")
# docker run options that take a value (``-v X`` or ``-v=X``/``--volume=X``).
VALUED = frozenset(
    {"-v", "--volume", "-e", "--env", "--gpus", "--shm-size", "-m", "--memory", "-p",
     "--publish", "--name", "--ipc", "--network", "--net", "--runtime", "--env-file", "-w",
     "--workdir", "--entrypoint", "-u", "--user", "--device", "--ulimit", "--restart", "-l",
     "--label", "--platform", "--pull", "--mount", "--cpus", "--cpuset-cpus", "-h",
     "--hostname", "--log-driver", "--log-opt"}
)  # fmt: skip
SGLANG = ("sglang.launch_server", "sglang")
GPU_DEVICES = re.compile(r'^"?device=(?P<ids>[0-9,\s]+)"?$')


class LaunchError(ValueError):
    """A command line ``faceoff init`` cannot read; the message says how to write the arm."""


@dataclass
class Container:
    """What a ``docker run`` line says of the container."""

    image: str
    mounts: list[tuple[str, str, bool]] = field(default_factory=list)  # source, target, ro
    gpus: list[int] | None = None  # ``--gpus "device=0,1"``; None: not said by index
    shm_size: str | None = None
    memory: str | None = None


@dataclass
class Launch:
    """A launch line, its engine's words apart."""

    engine: list[str]  # the engine's command line: ``vllm serve MODEL …``
    env: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # lane variable -> operator's
    container: Container | None = None
    notes: list[str] = field(default_factory=list)  # what was read otherwise or left out
    left_out: list[str] = field(default_factory=list)  # docker run options faceoff does itself


def read_launch(words: list[str], where: str) -> Launch:
    """``words`` split as a shell does: assignments, then the engine or ``docker run``."""
    launch = Launch(engine=[])
    rest = _assignments(words, launch, where)
    if rest[:2] in ([d, "run"] for d in DOCKERS):
        rest = _docker_run(rest[2:], launch, where)
    _not_sglang(rest, where)
    launch.engine = rest
    return launch


def _assignments(words: list[str], launch: Launch, where: str) -> list[str]:
    index = 1 if words[:1] == ["env"] else 0
    while index < len(words) and (found := ASSIGNMENT.match(words[index])):
        _variable(found["name"], found["value"], launch, where)
        index += 1
    return words[index:]


def _variable(name: str, value: str, launch: Launch, where: str) -> None:
    if secret_name(name):
        launch.secrets[name] = name
        launch.notes.append(
            f"{where}: {name} is a secret: [arms.secrets] {name} = {name!r} reads it from the "
            "operator's environment at run time (its value is not written)"
        )
    else:
        launch.env[name] = value


def _docker_run(words: list[str], launch: Launch, where: str) -> list[str]:
    index = 0
    said: dict[str, Any] = {"mounts": []}  # the Container's fields, as the options give them
    while index < len(words) and words[index].startswith("-"):
        option, equals, value = words[index].partition("=")
        if option in VALUED and not equals:
            index += 1
            value = words[index] if index < len(words) else ""
        _docker_option(option, value, said, launch, where)
        index += 1
    if index >= len(words):
        raise LaunchError(f"{where}: the docker run line names no image")
    image, args = words[index], words[index + 1 :]
    launch.container = Container(image, **said)
    if launch.left_out:
        launch.notes.append(
            f"{where}: docker run {' '.join(launch.left_out)} left out: faceoff starts the "
            "container itself, on the host network and IPC, with the arm's port and GPUs"
        )
    return args if args[:1] in (["vllm"], ["python"], ["python3"]) else ["vllm", "serve", *args]


def _docker_option(
    option: str, value: str, said: dict[str, Any], launch: Launch, where: str
) -> None:
    if option in ("-v", "--volume"):
        source, _, rest = value.partition(":")
        target, _, mode = rest.partition(":")
        said["mounts"].append((source, target or source, "ro" in mode.split(",")))
    elif option in ("-e", "--env"):
        name, equals, given = value.partition("=")
        if equals or secret_name(name):
            _variable(name, given, launch, where)
        else:
            launch.notes.append(
                f"{where}: -e {name} takes its value from the shell that runs docker; give it "
                f'in the arm\'s env = {{ {name} = "…" }}'
            )
    elif option == "--gpus":
        devices = GPU_DEVICES.match(value.strip("'"))
        if devices:
            said["gpus"] = [int(i) for i in re.split(r"[,\s]+", devices["ids"].strip()) if i]
        else:
            launch.notes.append(
                f'{where}: --gpus {value} names no GPU indices; give --gpus 0,1 (or "device=0,1")'
            )
    elif option == "--shm-size":
        said["shm_size"] = value
    elif option in ("-m", "--memory"):
        said["memory"] = value
    else:
        launch.left_out.append(f"{option} {value}".strip() if option in VALUED else option)


def _not_sglang(words: list[str], where: str) -> None:
    if any(w in SGLANG for w in words[:3]) or any("sglang" in w for w in words[:1]):
        raise LaunchError(
            f"{where}: an SGLang server line is not read (faceoff init reads `vllm serve`); "
            "give its image with --incumbent-image/--candidate-image and --model, then write "
            'the arm\'s engine = "other" and its command in the matrix (docs/guide/'
            "your-engine.md)"
        )
