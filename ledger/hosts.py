"""The host a campaign runs on, as the ledger records it.

Several GPU hosts may share one ledger (PostgreSQL): each campaign row names the host that
opened it, so that ``faceoff status`` shows this host's campaigns and ``--all-hosts``
every host's. ``FACEOFF_HOST`` names the host where the machine's own name would not do
(a container's random hostname, a name that changes with the network); else it is the
machine's name.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

HOST_ENV = "FACEOFF_HOST"


def this_host(environ: Mapping[str, str]) -> str:
    return environ.get(HOST_ENV) or socket.gethostname()
