"""Every file a campaign writes has its model in ``faceoff/formats/``, and no other package
defines one: an ``Artifact`` outside it is a command's printed answer or a file the operator
names, declared here with why."""

from __future__ import annotations

import ast
from pathlib import Path

from faceoff.module_reference import PACKAGES, ROOT

# Artifacts that are no campaign file: what `--json` prints, an export the operator names,
# the GPU host check's report. Each keeps its model beside the command that makes it.
NOT_CAMPAIGN_FILES = {
    "flows/cli/status_report.py:StatusReport": "`faceoff status --json`",
    "flows/cli/error_output.py:ErrorOutput": "any command's error under `--json`",
    "flows/cli/script_output.py:PlanOutput": "`faceoff validate --json`",
    "flows/cli/script_output.py:TicketsOutput": "`faceoff tickets --json`",
    "evidence/history/across_nights.py:HistoryReport": "`faceoff history --json`",
    "evidence/views/export.py:ExportRows": "`faceoff export`, to a file the operator names",
    "evidence/audit/checklist.py:AuditOutput": "`faceoff audit --json`",
    "deploy/gpu-check/gpu_check.py:GpuCheckReport": "the GPU host check's report",
}


def artifact_classes(files: list[Path], root: Path = ROOT) -> set[str]:
    """``path:Class`` (relative to ``root``) of every class whose bases name ``Artifact``."""
    found = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(_names_artifact(b) for b in node.bases):
                found.add(f"{file.relative_to(root).as_posix()}:{node.name}")
    return found


def _names_artifact(base: ast.expr) -> bool:
    return (isinstance(base, ast.Name) and base.id == "Artifact") or (
        isinstance(base, ast.Attribute) and base.attr == "Artifact"
    )


def product_files() -> list[Path]:
    roots = [ROOT / p for p in PACKAGES] + [ROOT / "deploy"]
    return sorted(f for root in roots for f in root.rglob("*.py"))


def test_no_package_but_formats_defines_a_campaign_files_model() -> None:
    outside = {
        name
        for name in artifact_classes(product_files())
        if not name.startswith("faceoff/formats/") and not name.startswith("faceoff/artifact.py")
    }
    assert outside == set(NOT_CAMPAIGN_FILES), (
        "a model written to disk outside faceoff/formats/: move a campaign file's model there, "
        "or declare a command's printed output in NOT_CAMPAIGN_FILES with why"
    )


def test_the_rule_finds_an_artifact_by_either_spelling_of_its_base(tmp_path: Path) -> None:
    planted = tmp_path / "evidence" / "loose.py"
    planted.parent.mkdir()
    planted.write_text(
        "from faceoff import artifact\nfrom faceoff.artifact import Artifact, Spec\n"
        "class Loose(Artifact): ...\nclass Dotted(artifact.Artifact): ...\nclass Kept(Spec): ...\n"
    )
    assert artifact_classes([planted], tmp_path) == {
        "evidence/loose.py:Loose",
        "evidence/loose.py:Dotted",
    }
