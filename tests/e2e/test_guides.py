"""The guides run as written: every ```` ```sh walk ```` block of docs/guide/, page after page
of a walk, in one fresh folder, as one shell session would run it (what a command exports or
where it `cd`s carries to the next), against the simulator. Each command must exit as the
page says (a trailing ``# exits N``, else 0) and leave the files a ``# writes A, B`` line
names, so a guide cannot drift from faceoff unnoticed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO
from tests.lanes.helpers import kill_recorded_processes

GUIDE = REPO / "docs" / "guide"
# Each walk's pages in order, in one folder: the reviewer's and the auditor's guides go on
# from the tutorial, on its campaign; the engine guide's walked blocks need no engine.
WALKS = {
    "tutorial": ("first-campaign.md", "reviewing.md", "auditing.md"),
    "engines": ("your-engine.md",),
    "fidelity": ("fidelity.md",),
}
BLOCK = re.compile(r"^```sh walk\n(.*?)^```$", re.MULTILINE | re.DOTALL)
HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?")
EXITS = re.compile(r"#\s*exits\s+(\d+)\s*$")
WRITES = "# writes "
# Variables of the operator's shell that would change what a guide's commands do.
UNSET = ("FACEOFF_WORKDIR", "FACEOFF_DB_URL", "FACEOFF_SIGNING_KEY", "FACEOFF_SIGNING_KEY_FILE")
COMMAND_TIMEOUT_S = 300


@dataclass
class Step:
    page: str
    line: int  # of the command's first line in the page
    command: str
    exits: int = 0
    writes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.command.splitlines()[0]}"


def walked_steps(page: str, text: str) -> list[Step]:
    """The page's walked commands, a heredoc or a continued line as one command."""
    steps: list[Step] = []
    for block in BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(1)) + 1
        lines = block.group(1).splitlines()
        index = 0
        while index < len(lines):
            index = _next(page, first, lines, index, steps)
    return steps


def _next(page: str, first: int, lines: list[str], index: int, steps: list[Step]) -> int:
    """Reads the command or comment at ``index`` into ``steps``; the index after it."""
    line = lines[index]
    if line.startswith(WRITES):
        steps[-1].writes += tuple(p.strip() for p in line[len(WRITES) :].split(","))
        return index + 1
    if not line.strip() or line.lstrip().startswith("#"):
        return index + 1
    end = index
    heredoc = HEREDOC.search(line)
    if heredoc:
        end = lines.index(heredoc.group(1), index + 1)
    while lines[end].endswith("\\"):
        end += 1
    exits = EXITS.search(lines[end])
    command = "\n".join(lines[index : end + 1])
    steps.append(Step(page, first + index, command, int(exits.group(1)) if exits else 0))
    return end + 1


@dataclass
class Shell:
    """One shell session's state between commands: its folder and its exported variables."""

    cwd: Path
    env: dict[str, str]

    def run(self, step: Step, state: Path) -> subprocess.CompletedProcess[str]:
        script = f'{step.command}\n__rc=$?\nenv -0 > "{state}"\nexit $__rc\n'
        done = subprocess.run(
            ["bash", "-c", script], cwd=self.cwd, env=self.env, capture_output=True, text=True,
            timeout=COMMAND_TIMEOUT_S, check=False,
        )  # fmt: skip
        if state.exists():
            pairs = (v.partition("=") for v in state.read_text().split("\0") if v)
            self.env = {name: value for name, _, value in pairs}
            self.cwd = Path(self.env.get("PWD", str(self.cwd)))
        return done


def fresh_shell(folder: Path, api_url: str) -> Shell:
    """The reader's shell as the guides' "Before you start" leaves it: faceoff on PATH,
    CHECKOUT naming the checkout; no campaign settings of this host's operator."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env |= {"CHECKOUT": str(REPO), "PREFECT_API_URL": api_url, "COLUMNS": "120"}
    return Shell(folder, env | {"PWD": str(folder)})


def steps_of(walk: str) -> list[Step]:
    return [s for page in WALKS[walk] for s in walked_steps(page, (GUIDE / page).read_text())]


def test_the_tutorial_walks_the_whole_way_from_init_to_the_audit() -> None:
    """What the walk runs, so it cannot pass by running nothing."""
    tutorial = [s for s in steps_of("tutorial") if s.page == "first-campaign.md"]
    commands = [s.command.split()[:2] for s in tutorial]
    for command in ("init", "validate", "preflight", "run", "status", "review", "audit"):
        assert ["faceoff", command] in commands, command
    assert [s.exits for s in tutorial if s.command.startswith("faceoff preflight")] == [2, 0]
    assert all(s.writes for s in steps_of("tutorial") if s.command.startswith("faceoff run"))


def test_every_guide_with_walked_blocks_is_walked() -> None:
    walked = {page for pages in WALKS.values() for page in pages}
    marked = {p.name for p in GUIDE.glob("*.md") if BLOCK.search(p.read_text())}
    assert marked == walked


def test_a_command_spans_its_continued_lines_and_its_heredoc() -> None:
    page = "```sh walk\nfaceoff init a \\\n  --gpus 0\n# writes a\ncat > b <<'EOF'\nx\nEOF\n"
    page += "faceoff preflight a    # exits 2\n```\n"
    steps = walked_steps("p.md", page)
    assert [(s.line, s.exits, s.writes) for s in steps] == [(2, 0, ("a",)), (5, 0, ()), (8, 2, ())]
    assert steps[1].command == "cat > b <<'EOF'\nx\nEOF"


# The tutorial's rehearsal and the fidelity guide's campaign run as an operator writes them
# (the default guards, 32 requests a cell): on a host busy with other tests, one answer in one
# read blocks a cell and `faceoff run` exits 3, not the 0 the page says. The engine guide's
# blocks write a matrix and run no campaign: that walk runs in the parallel pass.
RUN_A_CAMPAIGN = ("tutorial", "fidelity")
WALKED = [pytest.param(w, marks=[pytest.mark.alone] * (w in RUN_A_CAMPAIGN)) for w in sorted(WALKS)]


@pytest.mark.prefect
@pytest.mark.parametrize("walk", WALKED)
def test_the_guides_run_as_written(walk: str, harness_api: str, tmp_path: Path) -> None:
    folder = tmp_path / walk
    folder.mkdir()
    shell = fresh_shell(folder, harness_api)
    try:
        for step in steps_of(walk):
            done = shell.run(step, tmp_path / "shell.env")
            said = (done.stdout + done.stderr)[-4000:]
            assert done.returncode == step.exits, f"{step} exited {done.returncode}:\n{said}"
            missing = [p for p in step.writes if not (shell.cwd / p).exists()]
            assert not missing, f"{step} left no {missing}:\n{said}"
    finally:
        for campaign_dir in (folder / "runs").glob("*/"):
            kill_recorded_processes(campaign_dir)
