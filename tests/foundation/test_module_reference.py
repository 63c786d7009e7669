"""docs/reference/modules.md is generated from the module docstrings, shipped current, covers
every module of every package the distribution installs, and is reachable from the docs."""

from __future__ import annotations

import re
import tomllib

from faceoff.module_reference import (
    ARCHITECTURE_PATH,
    NO_DOCSTRING,
    PACKAGES,
    REFERENCE_PATH,
    formats_listing,
    module_docs,
    module_reference,
    summary,
    with_formats_listing,
)
from tests.foundation.cli import REPO


def test_the_shipped_module_reference_is_current() -> None:
    assert REFERENCE_PATH.read_text(encoding="utf-8") == module_reference(), (
        "run `python -m faceoff.module_reference`"
    )


def test_it_covers_every_package_the_distribution_installs() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    installed = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(PACKAGES) == sorted(p.rstrip("*") for p in installed)


def test_every_module_is_listed_with_a_docstring() -> None:
    page = REFERENCE_PATH.read_text(encoding="utf-8")
    for package in PACKAGES:
        files = set((REPO / package).rglob("*.py"))
        docs = module_docs(package)
        assert {REPO / d.path for d in docs} == files, package
        assert [d.name for d in docs if d.summary == NO_DOCSTRING] == [], "add a docstring"
        for doc in docs[1:]:
            assert f"[`{doc.name}`](../../{doc.path.as_posix()})" in page, doc.name


def test_every_link_of_the_page_reaches_a_file() -> None:
    page = REFERENCE_PATH.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)\)", page)
    assert len(targets) > 300
    missing = [t for t in targets if not (REFERENCE_PATH.parent / t).resolve().is_file()]
    assert missing == []


def test_a_summary_is_the_first_paragraph_on_one_line_safe_in_a_table() -> None:
    docstring = "Pairs | ratios\nof one cell.\n\nMore that the page leaves out."
    assert summary(docstring) == "Pairs \\| ratios of one cell."
    assert summary(None) == summary("  ") == NO_DOCSTRING


def test_the_architecture_page_and_the_readme_link_to_it() -> None:
    for page in ("docs/architecture.md", "README.md"):
        assert "reference/modules.md" in (REPO / page).read_text(encoding="utf-8"), page


def test_the_architecture_page_lists_the_formats_as_they_are() -> None:
    page = ARCHITECTURE_PATH.read_text(encoding="utf-8")
    assert page == with_formats_listing(page), "run `python -m faceoff.module_reference`"
    root = REPO / "faceoff"
    files = (p.relative_to(root).with_suffix("") for p in (root / "formats").rglob("*.py"))
    formats = {".".join(p.parts).removesuffix(".__init__") for p in files} - {"formats"}
    assert formats == set(re.findall(r"\[`(formats\.[\w.]+)`\]", page))


def test_the_listing_names_each_model_with_the_version_it_writes() -> None:
    listing = formats_listing()
    assert "`GpuSample` (2), `HostSample` (1)" in listing
    verdict = "[`formats.attempt.verdict`](../faceoff/formats/attempt/verdict.py)"
    assert f"| {verdict} | ``verdict.json``: " in listing
