"""The modules that import Prefect: the flows, their tasks and the run's server."""
