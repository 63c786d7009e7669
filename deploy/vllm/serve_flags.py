#!/usr/bin/env python3
"""Writes the flag list of ``vllm serve`` that ``faceoff validate`` checks engine flags against.

It reads the real CLI's own help, all of it, so the list is the pinned engine's and nobody's
memory of it:

    python deploy/vllm/vllm_cli.py serve --help=all \\
        | python deploy/vllm/serve_flags.py 0.32.0 > matrix/flags/vllm-0.32.0.txt

(with the vLLM venv's python for the first command, deploy/vllm/install.sh). Option lines of
argparse's help are indented by two spaces and name each spelling of an option, comma
separated, before its metavar and description.
"""

import re
import sys

OPTION_LINE = re.compile(r"^  (-.*)$")
SPELLING = re.compile(r"^-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*$")


def spellings(line: str) -> list[str]:
    """``--a A, -b A`` → [--a, -b]: the first word of each comma-separated part."""
    head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]  # the description follows 2 spaces
    words = [part.strip().split(" ")[0] for part in head.split(", ")]
    return [w for w in words if SPELLING.match(w)]


def main() -> None:
    version = sys.argv[1]
    flags = sorted(
        {f for line in sys.stdin if (m := OPTION_LINE.match(line)) for f in spellings(m[1])}
    )
    print(f"# vllm serve {version}: every flag spelling of `vllm serve --help=all`, one a line.")
    print("# Made by deploy/vllm/serve_flags.py from the real CLI; do not edit by hand.")
    print("\n".join(flags))


if __name__ == "__main__":
    main()
