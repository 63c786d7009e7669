"""Prefect settings for ``faceoff run`` on one machine: an ephemeral server, offline.

With no ``PREFECT_API_URL`` Prefect starts a temporary server for the run. Its
database and logs go under the workdir (``PREFECT_HOME``) and neither the server
nor the client sends analytics. Whatever the operator has set is kept. No Prefect import here: the
values must be in the environment before Prefect is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from pathlib import Path

PREFECT_DIR = ".prefect"


def prefect_defaults(
    environ: Mapping[str, str], workdir: Path, *, live_view: bool = False
) -> dict[str, str]:
    """The settings to add to ``environ`` (only those it does not set already).

    With the live view on the terminal, Prefect's console shows warnings only (the
    view shows progress; every log line still goes to the Prefect API).
    """
    defaults = {
        "PREFECT_HOME": str((Path(workdir) / PREFECT_DIR).resolve()),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    if live_view:
        defaults["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
    return {key: value for key, value in defaults.items() if key not in environ}


def apply_prefect_defaults(
    environ: MutableMapping[str, str], workdir: Path, *, live_view: bool = False
) -> None:
    """Add the defaults to ``environ`` and create ``PREFECT_HOME`` (Prefect does not create
    missing parents)."""
    environ.update(prefect_defaults(environ, workdir, live_view=live_view))
    Path(environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
