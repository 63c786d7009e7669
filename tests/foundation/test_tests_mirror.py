"""The unit tests mirror the source tree: ``tests/<package>/<subpackage>/test_<module>.py``
tests ``<package>/<subpackage>/<module>.py``, so a module's tests are found by its path and
a module without tests shows. The tiers that exercise many modules at once stay apart in
folders of their own (``TIERS``)."""

from __future__ import annotations

from pathlib import Path

from tests.foundation.cli import REPO

TESTS = REPO / "tests"
TIERS = {
    "e2e": "whole campaigns through `faceoff run`",
    "vllm": "the real vLLM engine",
    "gpu": "a real NVIDIA GPU",
    "restore": "restoration scenarios across lanes, ledger and receipt",
    "foundation": "checks of the whole tree: the import contract, generated docs, the CLI",
    "data": "recorded inputs, no tests",
}


def unmirrored(tests: Path = TESTS, repo: Path = REPO) -> list[str]:
    """Each unit test file (outside the tiers) whose path names no module of the tree."""
    found = []
    for test in sorted(tests.rglob("test_*.py")):
        folder = test.parent.relative_to(tests)
        if folder.parts and folder.parts[0] in TIERS:
            continue
        module = repo / folder / f"{test.stem.removeprefix('test_')}.py"
        if not module.is_file():
            found.append(test.relative_to(repo).as_posix())
    return found


def test_every_unit_test_file_names_the_module_it_tests_by_its_path() -> None:
    assert unmirrored() == []  # move it to tests/<path>/test_<module>.py


def test_a_test_file_beside_no_module_of_its_name_is_found(tmp_path: Path) -> None:
    for name in ("pkg/sub/model.py", "tests/pkg/sub/test_model.py", "tests/pkg/test_model.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "tests/e2e").mkdir()
    (tmp_path / "tests/e2e/test_campaign.py").write_text("")
    assert unmirrored(tmp_path / "tests", tmp_path) == ["tests/pkg/test_model.py"]
