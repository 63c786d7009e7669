"""What the command line says to a person and to a script: help that reads whole at 80 columns
and points at sections that exist, switches that say they take no value, an empty status
that says so, and errors as JSON under ``--json``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from flows.cli.app import app
from tests.foundation.cli import REPO, faceoff
from tests.foundation.output_schemas import shaped
from tests.foundation.test_matrix import MINIMAL

DOC_REFERENCE = re.compile(r'docs/(\w+)\.md "([^"]+)"')


def test_top_level_help_gives_each_command_a_whole_sentence_at_80_columns() -> None:
    result = faceoff("--help", columns=80)
    assert result.returncode == 0, result.stderr
    listed = result.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]  # the exit table after
    commands = listed.rstrip("\n").splitlines()
    names = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert sorted(line.split()[0] for line in commands) == names, result.stdout
    for line in commands:
        assert line.endswith(".") and not line.endswith("..."), line
        assert len(line) <= 80, line


def help_texts() -> list[tuple[str, str]]:
    """(where, text) of every command's help and every option's."""
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    found = []
    for name, command in commands.items():
        found.append((name, command.help or ""))
        found += [(f"{name} {p.name}", getattr(p, "help", None) or "") for p in command.params]
    return found


def sections(doc: str) -> set[str]:
    text = (REPO / "docs" / f"{doc}.md").read_text(encoding="utf-8")
    return {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}


def test_every_doc_section_the_help_names_exists() -> None:
    named = [
        (where, doc, title)
        for where, text in help_texts()
        for doc, title in DOC_REFERENCE.findall(text)
    ]
    assert ("validate aa", "matrix", "A/A twin") in named  # where the A/A twin is explained
    for where, doc, title in named:
        assert title in sections(doc), f"{where}: docs/{doc}.md has no section {title!r}"


def test_a_switch_given_a_value_says_it_takes_none(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(MINIMAL)
    plain = faceoff("validate", "--aa", "yes", str(matrix))
    assert plain.returncode == 2 and plain.stdout == ""
    assert plain.stderr.startswith("error: --aa is a switch and takes no value (got 'yes')")
    as_json = faceoff("validate", "--json", "true", str(matrix))
    assert as_json.returncode == 2
    error = shaped("error", as_json.stdout)["error"]
    assert error["what"].startswith("--json is a switch and takes no value (got 'true')")
    assert "<bool>" not in faceoff("validate", "--help").stdout  # the help no longer offers one


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["validate", "--json", "missing.toml"], "matrix file not found"),
        (["validate", "--json"], "Missing argument 'path'"),
        (["status", "--json", "--workdir", "typo"], "no such folder"),
        (["tickets", "--json", "--bogus"], "No such option: --bogus"),
    ],
)
def test_under_json_an_error_is_a_json_object_on_stdout(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    result = faceoff(*args, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == ""
    out = shaped("error", result.stdout)
    assert (out["ok"], out["exit_code"]) == (False, 2)
    assert expected in out["error"]["message"], out


def test_an_error_without_json_stays_one_line_on_stderr(tmp_path: Path) -> None:
    result = faceoff("validate", "missing.toml", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "error: missing.toml: matrix file not found. Check the path.\n"


def test_status_of_no_campaigns_says_so_in_a_line(tmp_path: Path) -> None:
    result = faceoff("status", "--workdir", str(tmp_path), columns=80)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"campaigns on \S+: none yet\n", result.stdout), result.stdout
    every = faceoff("status", "--all-hosts", "--workdir", str(tmp_path), columns=80)
    assert every.stdout == "campaigns of every host: none yet\n"


def test_the_readme_and_flows_md_give_the_demo_the_same_time() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    flows = (REPO / "docs" / "flows.md").read_text(encoding="utf-8")
    said = re.findall(r"`make demo` takes about (\d+) s", readme)
    measured = re.findall(r"`make demo` took (\d+) s", flows)
    assert said and measured and said == measured, (said, measured)
