"""The import contract of the packages (docs/architecture.md, "Import contract").

An AST walk over every module of the packages: each imports only the packages its rule
allows; the pure layers (guards, evidence but its edge modules) import no machinery, not
directly and not through the module-level imports of what they import; a records module
imports only the standard library, pydantic, faceoff, the matrix model and other records.
A fresh interpreter proves the same of ``import guards.judge, evidence.audit``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.foundation.cli import REPO

LIBRARIES = (
    *("aiohttp", "alembic", "docker", "matplotlib", "prefect"),
    *("psutil", "pynvml", "sqlalchemy", "sqlmodel"),
)
# Samplers, clients, Docker, the ledger and the flows: what runs a campaign, not what reads one.
MACHINERY = (
    *("collectors.cell", "collectors.engine", "collectors.gpu", "collectors.host"),
    *("collectors.nvml", "collectors.stall", "collectors.stall_monitor"),
    *("collectors.virtual_nvml", "collectors.gpu_owner", "collectors.gpu_posture"),
    *("workload.client", "workload.run_cell", "workload.runner", "workload.transport"),
    *("lanes.docker", "lanes.factory", "lanes.images", "lanes.leftovers", "lanes.process"),
    "lanes.restoration",
    *("flows", "ledger", "simulator"),
)


@dataclass(frozen=True)
class Rule:
    may_import: tuple[str, ...]  # project packages or modules, besides its own package
    never: tuple[str, ...] = ()  # not even through the module-level imports of what it imports
    edges: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # module -> exemptions


PURE = LIBRARIES + MACHINERY
EVERY_LAYER = (
    *("faceoff", "matrix", "workload", "collectors", "lanes"),
    *("guards", "evidence", "tickets", "ledger"),
)
CONTRACT: Mapping[str, Rule] = {
    "faceoff": Rule(()),
    "matrix": Rule(("faceoff",)),
    "workload": Rule(("faceoff", "matrix")),
    "collectors": Rule(("faceoff", "matrix", "workload")),
    "lanes": Rule(("faceoff", "matrix", "collectors")),
    "tickets": Rule(("faceoff",)),
    "ledger": Rule(("faceoff",)),
    "simulator": Rule(()),
    "guards": Rule(("faceoff", "matrix", "workload", "collectors", "lanes.records"), PURE),
    "evidence": Rule(
        ("faceoff", "matrix", "workload", "collectors", "lanes", "guards", "tickets"),
        PURE,
        edges={
            "evidence.host": ("psutil", "pynvml"),  # collects the host facts of MANIFEST.json
            "evidence.plots": ("matplotlib",),  # rendering
            "evidence.report": ("matplotlib",),  # rendering, through evidence.plots
            "evidence.trend_plots": ("matplotlib",),  # history.html's plots
            "evidence.history_page": ("matplotlib",),  # rendering, through evidence.trend_plots
        },
    ),
    "flows": Rule(EVERY_LAYER),  # the orchestrator: everything but the simulator
}
RECORDS = (
    *("collectors.records", "collectors.settings", "workload.records", "lanes.records"),
    *("guards.records", "guards.verdict", "guards.reasons", "evidence.host_facts"),
)
RECORDS_MAY_IMPORT = ("pydantic", "faceoff", "matrix.model", "matrix.families", *RECORDS)


@dataclass(frozen=True)
class Import:
    name: str  # the module, or module.name of a from-import
    line: int
    at_import: bool  # runs when the module is imported (not in a function, not type-only)


def _matches(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _type_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], module: str, at_import: bool) -> Iterator[Import]:
    for node in body:
        if isinstance(node, ast.Import):
            yield from (Import(a.name, node.lineno, at_import) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing module's package
                parent = module.split(".")[: -node.level]
                base = ".".join([*parent, base] if base else parent)
            yield Import(base, node.lineno, at_import)
            yield from (Import(f"{base}.{a.name}", node.lineno, at_import) for a in node.names)
        elif isinstance(node, ast.If):
            yield from _imports(node.body, module, at_import and not _type_only(node))
            yield from _imports(node.orelse, module, at_import)
        elif isinstance(node, ast.Try | ast.With):
            for block in ("body", "handlers", "orelse", "finalbody"):
                for part in getattr(node, block, []):
                    inner = part.body if isinstance(part, ast.ExceptHandler) else [part]
                    yield from _imports(inner, module, at_import)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _imports(node.body, module, at_import=False)  # lazy: runs when called
        else:  # a class body, a loop: runs with the module
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from _imports([child], module, at_import)


def walk(root: Path) -> dict[str, tuple[Path, list[Import]]]:
    """Every module of the contract's packages under ``root``: its file and its imports."""
    found: dict[str, tuple[Path, list[Import]]] = {}
    for package in CONTRACT:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found[module] = (path, list(_imports(tree.body, module, at_import=True)))
    return found


def _loaded(name: str, modules: Mapping[str, object]) -> list[str]:
    """The project modules importing ``name`` loads: it (or its module) and its packages."""
    parts = name.split(".")
    return [m for i in range(1, len(parts) + 1) if (m := ".".join(parts[:i])) in modules]


def _reach(start: str, modules: Mapping[str, tuple[Path, list[Import]]]) -> dict[str, list[str]]:
    """Every name loaded when ``start`` is imported, with the chain of modules that loads it."""
    chains: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:
        module = queue.pop()
        for imp in modules[module][1]:
            if not imp.at_import:
                continue
            for loaded in _loaded(imp.name, modules):
                if loaded not in chains:
                    chains[loaded] = [*chains[module], loaded]
                    queue.append(loaded)
            chains.setdefault(imp.name, [*chains[module], imp.name])
    return chains


def violations(root: Path) -> list[str]:
    """Each breach of the contract by the modules under ``root``, as ``file:line: what``."""
    modules = walk(root)
    found: list[str] = []
    for module, (path, imports) in modules.items():
        package = module.split(".")[0]
        rule = CONTRACT[package]
        exempt = rule.edges.get(module, ())
        where = path.relative_to(root)
        flagged: set[tuple[int, str]] = set()
        for imp in imports:
            if _matches(imp.name, exempt) or (imp.line, imp.name.rpartition(".")[0]) in flagged:
                continue  # an exemption, or the name of a from-import already flagged
            breach = _breach(imp.name, package, rule, module in RECORDS)
            if breach:
                flagged.add((imp.line, imp.name))
                found.append(f"{where}:{imp.line}: {breach}")
        if rule.never and not exempt:
            reached = _reach(module, modules)
            for name, chain in reached.items():
                parent = name.rpartition(".")[0]  # named already when it is machinery too
                shown = parent in reached and _matches(parent, rule.never)
                if len(chain) > 2 and _matches(name, rule.never) and not shown:
                    found.append(f"{where}: {module} loads {name} through {' -> '.join(chain)}")
    return sorted(set(found))


def _breach(name: str, package: str, rule: Rule, records: bool) -> str | None:
    top = name.split(".", maxsplit=1)[0]
    if top in CONTRACT and top != package and not _matches(name, rule.may_import):
        return f"{package} may not import {name}"
    if _matches(name, rule.never):
        return f"{package} must not import {name}"
    if records and _outside_records(name):
        return f"a records module may not import {name}"
    return None


def _outside_records(name: str) -> bool:
    top = name.split(".", maxsplit=1)[0]
    return top not in sys.stdlib_module_names and not _matches(name, RECORDS_MAY_IMPORT)


def test_the_packages_keep_the_import_contract() -> None:
    assert violations(REPO) == []


def test_the_contract_covers_every_package_and_names_real_modules() -> None:
    packages = {init.parent.name for init in REPO.glob("*/__init__.py")} - {"tests"}
    assert packages == set(CONTRACT)  # a new package gets its row in the table
    modules = walk(REPO)
    named = [*MACHINERY, *RECORDS, *(m for r in CONTRACT.values() for m in r.edges)]
    assert [m for m in named if m not in modules] == []


def _plant(root: Path, files: Mapping[str, str]) -> Path:
    for package in CONTRACT:
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_guard_importing_a_sampler_library_breaks_the_contract(tmp_path: Path) -> None:
    root = _plant(tmp_path, {"guards/rule.py": "import aiohttp\n"})
    assert violations(root) == ["guards/rule.py:1: guards must not import aiohttp"]


def test_machinery_reached_through_an_allowed_module_breaks_the_contract(tmp_path: Path) -> None:
    files = {
        "guards/rule.py": "from collectors.summary import summarize\n",
        "collectors/summary.py": "from collectors.engine import ENGINE_FILE\n",
        "collectors/engine.py": "import psutil\nENGINE_FILE = 'engine.jsonl'\n",
    }
    found = violations(_plant(tmp_path, files))
    assert found[0].startswith("guards/rule.py: guards.rule loads collectors.engine through")
    assert any("loads psutil through guards.rule -> collectors.summary" in f for f in found)


def test_the_renderer_may_be_imported_lazily_by_the_audit_not_at_import(tmp_path: Path) -> None:
    lazy = "def rebuild():\n    from evidence.report import render\n"
    files = {"evidence/audit.py": lazy, "evidence/report.py": "import matplotlib\n"}
    assert violations(_plant(tmp_path, files)) == []
    (tmp_path / "evidence/audit.py").write_text("from evidence.report import render\n")
    assert violations(tmp_path) == [
        "evidence/audit.py: evidence.audit loads matplotlib through"
        " evidence.audit -> evidence.report -> matplotlib"
    ]


def test_evidence_may_not_import_the_ledger(tmp_path: Path) -> None:
    files = {"evidence/review_recording.py": "from ledger.db import session_scope\n"}
    assert violations(_plant(tmp_path, files)) == [
        "evidence/review_recording.py:1: evidence may not import ledger.db"
    ]


def test_a_records_module_importing_machinery_breaks_the_contract(tmp_path: Path) -> None:
    files = {"workload/records.py": "from workload.journal import JournalWriter\n"}
    assert violations(_plant(tmp_path, files)) == [
        "workload/records.py:1: a records module may not import workload.journal"
    ]


def test_judging_and_auditing_load_no_machinery() -> None:
    probe = "import json, sys, guards.judge, evidence.audit; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(m for m in loaded if _matches(m, PURE)) == []
