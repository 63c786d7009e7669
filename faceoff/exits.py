"""The ``faceoff`` command's exit statuses: one meaning each, the same for every command, so
that a cron wrapper can tell a bug from a finding from an incumbent left down.

The table below is the one ``faceoff --help``, README.md and docs/flows.md show
(``tests/foundation/test_exit_codes.py`` holds them to it).
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    BUG = 1
    REFUSED = 2
    PARTIAL = 3
    NOT_RESTORED = 4
    FINDINGS = 5
    INTERRUPTED = 130
    TERMINATED = 143


MEANINGS: dict[Exit, str] = {
    Exit.OK: "done: complete, restored, or nothing found wrong",
    Exit.REFUSED: "bad input, an error, or refused; one line says what and what to do",
    Exit.PARTIAL: "closed partial (or a diagnostic not ok); the incumbent restored",
    Exit.NOT_RESTORED: "the incumbent is not restored: run `faceoff restore` after the fix",
    Exit.FINDINGS: "the audit found the bundle not as it was sealed",
    Exit.INTERRUPTED: "interrupted by Ctrl-C",
    Exit.TERMINATED: "terminated by SIGTERM; the incumbent restored first",
    Exit.BUG: "an unexpected failure with a traceback: a bug, never a finding",
}


def table_rows() -> list[str]:
    """The Markdown rows of the table, in the order above."""
    return [f"| {code.value} | {meaning} |" for code, meaning in MEANINGS.items()]


def help_text() -> str:
    """The table as ``faceoff --help`` ends with it: one line per status."""
    lines = [f"{code.value:<4}{meaning}" for code, meaning in MEANINGS.items()]
    # "\b" alone on a line: click keeps the next paragraph as written, unwrapped
    return "Exit statuses (every command):\n\n\b\n" + "\n".join(lines)
