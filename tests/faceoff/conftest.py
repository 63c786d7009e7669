"""The evidence tests' campaign and its bundle, for the tests of the bounded reader and the
seal's envelope: both plant what they check in a copy of the one real simulated campaign's
bundle the evidence tests share (``tests/evidence/conftest.py``), made once per test run."""

from tests.evidence.conftest import built, bundle_copy, campaign_dir, host_facts, source_facts

__all__ = ["built", "bundle_copy", "campaign_dir", "host_facts", "source_facts"]
