"""The ports the packages are handed from outside: the wall clock and the Docker client.
The same concept at another layer: ``flows.campaign.preflight.ports``.

Each is a type, not an implementation: a caller passes ``datetime.now(UTC)`` or a test's
fixed clock, ``docker.from_env()`` or nothing. The Docker Protocols name only the calls
faceoff makes, with the signatures of the docker SDK, so its client is one without a cast
(mypy checks that where ``flows`` builds it) and no package here imports ``docker`` to be
typed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

Clock = Callable[[], datetime]  # the wall clock: timezone-aware UTC, injected, never read at import


class DockerImage(Protocol):
    @property
    def id(self) -> str | None: ...

    attrs: dict[str, Any]


class DockerContainer(Protocol):
    @property
    def id(self) -> str | None: ...

    @property
    def name(self) -> str | None: ...

    @property
    def labels(self) -> dict[str, str]: ...

    @property
    def status(self) -> str: ...

    attrs: dict[str, Any]

    def start(self) -> None: ...

    def reload(self) -> None: ...

    def logs(self, *, stdout: bool = True, stderr: bool = True) -> bytes: ...

    def stop(self, *, timeout: float | None = None) -> None: ...

    def remove(self, *, force: bool = False) -> None: ...


class DockerContainers(Protocol):
    def create(
        self,
        image: str,
        command: str | list[str] | None = None,
        *,
        name: str | None = None,
        environment: dict[str, str] | list[str] | None = None,
        labels: dict[str, str] | list[str] | None = None,
        network_mode: str | None = None,
        ipc_mode: str | None = None,
        mounts: list[Any] | None = None,
        device_requests: list[Any] | None = None,
        mem_limit: str | int | None = None,
        shm_size: str | int | None = None,
    ) -> DockerContainer: ...

    def get(self, container_id: str) -> DockerContainer: ...

    def list(
        self, *, all: bool = False, filters: dict[str, str | list[str] | bool] | None = None
    ) -> Sequence[DockerContainer]: ...


class DockerImages(Protocol):
    def get(self, name: str) -> DockerImage: ...

    def pull(self, repository: str, tag: str | None = None) -> DockerImage: ...

    def get_registry_data(self, name: str) -> Any: ...  # the registry's manifest, nothing pulled


class DockerApi(Protocol):
    """The low-level API calls the host sampler makes (docker.APIClient)."""

    def inspect_container(self, container: str) -> dict[str, Any]: ...

    def stats(
        self,
        container: str,
        decode: bool | None = None,
        stream: bool = True,
        one_shot: bool | None = None,
    ) -> Any: ...  # a dict when stream is False, an iterator of them when True


class DockerClient(Protocol):
    """The client faceoff drives lanes, leftovers and host facts with (docker.DockerClient)."""

    @property
    def containers(self) -> DockerContainers: ...

    @property
    def images(self) -> DockerImages: ...

    @property
    def api(self) -> DockerApi: ...

    def ping(self) -> bool: ...

    def version(self, api_version: bool = True) -> dict[str, Any]: ...


DockerFactory = Callable[[], DockerClient]  # called only when a Docker lane or fact is needed


def container_id(container: DockerContainer) -> str:
    """A container's id: the SDK types it optional, but a container the daemon returned has one."""
    if container.id is None:
        raise LookupError(f"Docker returned a container without an id: {container.name!r}")
    return container.id
