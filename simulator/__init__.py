"""A vLLM-compatible engine simulator: faceoff's embedded default lane and test double.

Run it as ``python -m simulator --profile NAME --port P`` (or ``faceoff sim``); start it
from tests with ``simulator.launch.running``. It imports only the standard library,
aiohttp and prometheus_client, so that it also runs in the bare Debian image of
``deploy/images/sim/``. Production packages never import it. See docs/simulator.md.
"""

__all__: list[str] = []  # what other packages may import: nothing
