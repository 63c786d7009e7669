"""Index of faceoff's benchmarks; ``python -m benchmarks NAME [ARGS]`` runs one.

Each benchmark prints medians and ratios against a peer measured in the same run;
none is part of ``make test``.
"""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def index() -> dict[str, str]:
    """Benchmark module name -> the first line of its docstring."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        if path.name.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found[path.stem] = doc.splitlines()[0] if doc else ""
    return found


def main(argv: list[str]) -> int:
    benchmarks = index()
    if not argv or argv[0] in {"-h", "--help"}:
        print("usage: python -m benchmarks NAME [ARGS]   (each NAME --help says more)\n")
        for name, summary in benchmarks.items():
            print(f"  {name:<22} {summary}")
        return 0
    name, *rest = argv
    if name not in benchmarks:
        print(f"unknown benchmark {name!r}; known: {', '.join(benchmarks)}", file=sys.stderr)
        return 2
    sys.argv = [f"benchmarks.{name}", *rest]
    runpy.run_module(f"benchmarks.{name}", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
