"""Bringing an arm's recipe up and down: Docker and host-process lanes, readiness, identity,
smoke probes, the router hook, protected files and the restoration receipt."""
