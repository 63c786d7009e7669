"""This host's and this checkout's facts, as the evidence tests collect them
(``tests/evidence/conftest.py``), for the bundles of generated campaigns."""

from tests.evidence.conftest import host_facts, source_facts

__all__ = ["host_facts", "source_facts"]
