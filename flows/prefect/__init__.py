"""The modules that import Prefect: the flows, their tasks and the run's server."""

__all__: list[str] = []  # what other packages may import: nothing
