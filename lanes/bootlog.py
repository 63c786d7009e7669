"""The boot log: written redacted beside the lane record, and read for identity.

vLLM names the checkpoint's quantization method in its engine config line
(``… quantization=exl3, …``; ``quantization=None`` when unquantized); some
forks print ``quantization: exl3``. Identity trusts that line, never the
model path.
"""

from __future__ import annotations

import re
from pathlib import Path

from faceoff.files import write_text_atomic
from faceoff.formats.lane import BOOT_LOG_FILE
from lanes.environment import LaneEnv

QUANTIZATION = re.compile(r"\bquantization\s*[=:]\s*['\"]?(?P<value>[A-Za-z0-9_.\-]+)")
TAIL_LINES = 20


def write_boot_log(run_dir: Path, raw: str, env: LaneEnv) -> str:
    """Redact ``raw``, write it to ``boot.log`` (replacing the previous capture), return it."""
    text = env.scrub(raw)
    write_text_atomic(Path(run_dir) / BOOT_LOG_FILE, text, replace=True)
    return str(text)


def quantization_values(boot_log: str) -> list[str]:
    """Every distinct ``quantization=`` value in the log, in order of appearance."""
    values: list[str] = []
    for match in QUANTIZATION.finditer(boot_log):
        if match["value"] not in values:
            values.append(match["value"])
    return values


def tail(boot_log: str, lines: int = TAIL_LINES) -> str:
    """The last lines of a boot log, for error messages."""
    return "\n".join(boot_log.rstrip("\n").splitlines()[-lines:])
