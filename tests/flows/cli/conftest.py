"""The evidence tests' campaign and its bundle, for the tests of ``faceoff review`` and of
the end summary: both read the one real simulated campaign the evidence tests share
(``tests/evidence/conftest.py``), made once per test run."""

from tests.evidence.conftest import built, bundle_copy, campaign_dir, host_facts, source_facts

__all__ = ["built", "bundle_copy", "campaign_dir", "host_facts", "source_facts"]
