"""Bringing an arm's recipe up and down: Docker and host-process lanes, readiness, identity,
smoke probes, the router hook, protected files and restoration (its receipt:
``faceoff.formats.receipt``)."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "bootlog",
    "bringup",
    "commands",
    "deadlines",
    "environment",
    "factory",
    "http",
    "images",
    "lane",
    "lane_context",
    "leftovers",
    "probes",
    "process",
    "readiness",
    "restoration",
    "router",
    "weights_manifest",
]
