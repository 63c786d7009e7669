"""One real simulated campaign per test session, and fresh bundles built from copies of it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from collectors.inventory import PynvmlInventory, collect_host, collect_source
from evidence.bundle.write import BundleIndex, write_bundle
from faceoff.formats.host_facts import HostFacts, SourceFacts
from tests.evidence.campaign import now, run_campaign
from tests.evidence.matrices import PLANTED_TOKEN, TOKEN_ENV, glm53_matrix
from tests.shared_once import made_once, shared_once

REPO = Path(__file__).resolve().parents[2]


def no_docker() -> object:
    raise ConnectionError("the evidence tests do not ask Docker for host facts")


@pytest.fixture(scope="session")
def host_facts() -> HostFacts:
    return collect_host(PynvmlInventory(), no_docker)


@pytest.fixture(scope="session")
def source_facts() -> SourceFacts:
    return collect_source(REPO)


@pytest.fixture(scope="session")
def campaign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The glm53-shaped campaign, run once per test run (every xdist worker reads the same
    one): 2 natural cells accepted, a controlled one failed."""

    def run(workdir: Path) -> Path:
        workdir.mkdir(parents=True)
        protected = workdir / "routes.yaml"
        protected.write_text("routes:\n  - llm.primary\n", encoding="utf-8")
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), TOKEN_ENV: PLANTED_TOKEN}
        return run_campaign(workdir, glm53_matrix([protected]), environ)

    return made_once(tmp_path_factory, "evidence-campaign", run)


@pytest.fixture(scope="session")
def built(
    campaign_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
    host_facts: HostFacts,
    source_facts: SourceFacts,
) -> BundleIndex:
    """A bundle of the campaign, built once per run from a copy of it (every xdist worker
    reads the same one); tests that change files copy it first."""

    def build(folder: Path) -> BundleIndex:
        root = folder / campaign_dir.name
        shutil.copytree(campaign_dir, root)
        return write_bundle(root, now=now, host=host_facts, source=source_facts)

    return shared_once(tmp_path_factory, "evidence-bundle", build)


@pytest.fixture
def bundle_copy(built: BundleIndex, tmp_path: Path) -> Callable[..., Path]:
    def copy(under: str = "") -> Path:
        target = tmp_path / under / built.root.name
        shutil.copytree(built.root, target)
        return target

    return copy
