"""The unit tests mirror the source tree: ``tests/<package>/<subpackage>/test_<module>.py``
tests ``<package>/<subpackage>/<module>.py``, so a module's tests are found by its path and
a module without tests shows. The tiers that exercise many modules at once stay apart in
folders of their own (``TIERS``). Test files written before the rule are listed in
``unmirrored.txt`` beside this module until they move; the list only shrinks."""

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
UNMIRRORED = Path(__file__).with_name("unmirrored.txt")


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


def listed() -> list[str]:
    lines = UNMIRRORED.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_every_unit_test_file_names_the_module_it_tests_by_its_path() -> None:
    assert sorted(set(unmirrored()) - set(listed())) == []  # tests/<path>/test_<module>.py


def test_the_list_of_files_yet_to_move_only_shrinks() -> None:
    assert sorted(set(listed()) - set(unmirrored())) == []  # moved or gone: off the list


def test_a_test_file_beside_no_module_of_its_name_is_found(tmp_path: Path) -> None:
    for name in ("pkg/sub/model.py", "tests/pkg/sub/test_model.py", "tests/pkg/test_model.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "tests/e2e").mkdir()
    (tmp_path / "tests/e2e/test_campaign.py").write_text("")
    assert unmirrored(tmp_path / "tests", tmp_path) == ["tests/pkg/test_model.py"]
