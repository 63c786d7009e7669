"""The import contract of the packages (docs/architecture.md, "Import contract").

The contract is the tables of that page, each after a ``contract:`` marker: this test reads
them, so there is no second copy to drift. An AST walk over every module of the packages
checks that each imports only the packages its row allows; the pure layers (guards, and
evidence but its edges) import no machinery, not directly and not through the module-level
imports of what they import; a records module imports only the standard library, pydantic,
faceoff, the spec and other records; a layer of evidence/ or flows/ imports none above it;
no module imports itself back through others (type-only and deferred imports counted); a
module of another package is imported only where its package's ``__all__`` (and each
subpackage's on the way) names it; and no two product classes share a name. A fresh
interpreter proves the pure part of it for ``import guards.judge, evidence.audit.reverify``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.foundation.cli import REPO

DOC = REPO / "docs" / "architecture.md"
UNNAMED_CLASSES = ("simulator",)  # an engine of its own: its names may echo the product's


@dataclass(frozen=True)
class Contract:
    may_import: Mapping[str, tuple[str, ...]]  # package -> project packages or modules
    pure: tuple[str, ...]  # packages that load no machinery
    machinery: tuple[str, ...]  # libraries and project modules
    edges: Mapping[str, tuple[str, ...]]  # module or subpackage -> what it may load anyway
    records: tuple[str, ...]
    records_may_import: tuple[str, ...]
    layers: Mapping[str, tuple[str, ...]]  # package -> its subpackages, bottom first
    kept_from: Mapping[str, tuple[str, ...]]  # layer -> what it must not load


def _tables(text: str) -> dict[str, list[list[str]]]:
    """Each ``<!-- contract: NAME -->`` table of the page: its body rows, cell by cell."""
    found: dict[str, list[list[str]]] = {}
    for match in re.finditer(r"<!-- contract: (.+?) -->\n((?:\|.*\n)+)", text):
        rows = match.group(2).strip().splitlines()[2:]  # past the header and its rule
        found[match.group(1)] = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    return found


def _names(cell: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`([^`]+)`", cell))


def read_contract(text: str) -> Contract:
    t = _tables(text)
    return Contract(
        may_import={_names(r[0])[0]: _names(r[1]) for r in t["packages"]},
        pure=tuple(_names(r[0])[0] for r in t["packages"] if r[2] == "yes"),
        machinery=tuple(n for r in t["machinery"] for n in _names(r[0])),
        edges={_names(r[0])[0]: _names(r[1]) for r in t["edges"]},
        records=tuple(_names(r[0])[0] for r in t["records"]),
        records_may_import=tuple(n for r in t["records may import"] for n in _names(r[0])),
        layers={_names(r[0])[0]: _names(r[1]) for r in t["layers"]},
        kept_from={_names(r[0])[0]: _names(r[1]) for r in t["kept from"]},
    )


CONTRACT = read_contract(DOC.read_text(encoding="utf-8"))


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


@dataclass(frozen=True)
class Module:
    path: Path
    imports: list[Import]
    classes: list[str]
    exports: tuple[str, ...] | None  # a package's ``__all__``: what other packages may import


def walk(root: Path, contract: Contract = CONTRACT) -> dict[str, Module]:
    """Every module of the contract's packages under ``root``: its file, imports and classes."""
    found: dict[str, Module] = {}
    for package in contract.may_import:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            imports = list(_imports(tree.body, module, at_import=True))
            classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
            found[module] = Module(path, imports, classes, _exports(tree))
    return found


def _exports(tree: ast.Module) -> tuple[str, ...] | None:
    """The module's ``__all__``, a list of string literals (None when it declares none)."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:
            return tuple(ast.literal_eval(node.value))
    return None


def _loaded(name: str, modules: Mapping[str, object]) -> list[str]:
    """The project modules importing ``name`` loads: it (or its module) and its packages."""
    parts = name.split(".")
    return [m for i in range(1, len(parts) + 1) if (m := ".".join(parts[:i])) in modules]


def _target(name: str, modules: Mapping[str, object]) -> str | None:
    """The project module an imported name is (a module, or a name defined in one)."""
    loaded = _loaded(name, modules)
    return loaded[-1] if loaded else None


def _reach(start: str, modules: Mapping[str, Module]) -> dict[str, list[str]]:
    """Every name loaded when ``start`` is imported, with the chain of modules that loads it."""
    chains: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:
        module = queue.pop()
        for imp in modules[module].imports:
            if not imp.at_import:
                continue
            for loaded in _loaded(imp.name, modules):
                if loaded not in chains:
                    chains[loaded] = [*chains[module], loaded]
                    queue.append(loaded)
            chains.setdefault(imp.name, [*chains[module], imp.name])
    return chains


def violations(root: Path, contract: Contract = CONTRACT) -> list[str]:
    """Each breach of the contract by the modules under ``root``, as ``file:line: what``."""
    modules = walk(root, contract)
    found: list[str] = []
    for module, info in modules.items():
        where = info.path.relative_to(root)
        found += [f"{where}:{line}: {what}" for line, what in _breaches(module, info, contract)]
        found += [f"{where}: {what}" for what in _loads(module, modules, contract)]
        found += [f"{where}:{line}: {what}" for line, what in _undeclared(module, info, modules)]
    found += _cycles(modules, root)
    found += _shared_names(modules, root)
    return sorted(set(found))


def _breaches(module: str, info: Module, contract: Contract) -> Iterator[tuple[int, str]]:
    exempt = _edge_of(module, contract)
    flagged: set[tuple[int, str]] = set()
    for imp in info.imports:
        if _matches(imp.name, exempt) or (imp.line, imp.name.rpartition(".")[0]) in flagged:
            continue  # an exemption, or the name of a from-import already flagged
        breach = _breach(imp.name, module, contract) or _upward(imp.name, module, contract)
        if breach:
            flagged.add((imp.line, imp.name))
            yield imp.line, breach


def _undeclared(
    module: str, info: Module, modules: Mapping[str, Module]
) -> Iterator[tuple[int, str]]:
    """Each import from another package of a name its package (or a subpackage on the way)
    leaves out of its ``__all__``."""
    top = module.split(".", maxsplit=1)[0]
    for imp in info.imports:
        parts = imp.name.split(".")
        if parts[0] == top or parts[0] not in modules:
            continue
        for depth in range(1, len(parts)):
            package = modules.get(".".join(parts[:depth]))
            if package is None or package.path.name != "__init__.py":
                break
            if package.exports is not None and parts[depth] not in package.exports:
                named, owner = ".".join(parts[: depth + 1]), ".".join(parts[:depth])
                yield imp.line, f"{named} is not in {owner}.__all__"
                break


def _edge_of(module: str, contract: Contract) -> tuple[str, ...]:
    """What an edge module may load, a pure package's or a layer's rule notwithstanding."""
    edges = contract.edges.items()
    return tuple(n for edge, names in edges if _matches(module, (edge,)) for n in names)


def _breach(name: str, module: str, contract: Contract) -> str | None:
    package = module.split(".", maxsplit=1)[0]
    top = name.split(".", maxsplit=1)[0]
    allowed = contract.may_import[package]
    if _matches(module, contract.records):  # its own rule, wherever its package sits
        return (
            f"a records module may not import {name}" if _outside_records(name, contract) else None
        )
    if top in contract.may_import and top != package and not _matches(name, allowed):
        return f"{package} may not import {name}"
    if package in contract.pure and _matches(name, contract.machinery):
        return f"{package} must not import {name}"
    return None


def _layer(module: str, contract: Contract) -> int | None:
    """The index of the layer a module of a layered package lies in (None: at its root)."""
    package, _, rest = module.partition(".")
    layers = contract.layers.get(package, ())
    sub = rest.split(".", maxsplit=1)[0]
    return layers.index(sub) if sub in layers else None


def _upward(name: str, module: str, contract: Contract) -> str | None:
    package = module.split(".", maxsplit=1)[0]
    if package not in contract.layers or name.split(".", maxsplit=1)[0] != package:
        return None
    mine, theirs = _layer(module, contract), _layer(name, contract)
    if mine is not None and theirs is not None and theirs > mine:
        layers = contract.layers[package]
        return f"{package}.{layers[mine]} may not import {name}, a layer above it"
    return None


def _loads(module: str, modules: Mapping[str, Module], contract: Contract) -> Iterator[str]:
    """What ``module`` loads through the module-level imports of what it imports, and must
    not: the machinery for a pure package, a library a layer is kept from."""
    pure = module.split(".", maxsplit=1)[0] in contract.pure
    kept = contract.kept_from.items()
    layer_never = tuple(n for layer, names in kept if _matches(module, (layer,)) for n in names)
    never = (*(contract.machinery if pure else ()), *layer_never)
    exempt = _edge_of(module, contract)
    reached = _reach(module, modules) if never else {}
    for name, chain in reached.items():
        parent = name.rpartition(".")[0]  # named already when it is forbidden too
        shown = parent in reached and _matches(parent, never)
        direct = len(chain) <= 2 and not _matches(name, layer_never)  # _breaches named it
        if _matches(name, never) and not _matches(name, exempt) and not shown and not direct:
            yield f"{module} loads {name} through {' -> '.join(chain)}"


def _outside_records(name: str, contract: Contract) -> bool:
    top = name.split(".", maxsplit=1)[0]
    allowed = (*contract.records_may_import, *contract.records)
    return top not in sys.stdlib_module_names and not _matches(name, allowed)


def _cycles(modules: Mapping[str, Module], root: Path) -> list[str]:
    """Each set of modules that import one another round, any import counted."""
    graph = {
        m: {t for imp in info.imports if (t := _target(imp.name, modules)) not in (None, m)}
        for m, info in modules.items()
    }
    return [
        f"{modules[c[0]].path.relative_to(root)}: import cycle {' -> '.join([*c, c[0]])}"
        for c in _strong_components(graph)
    ]


def _strong_components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w in graph), None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(component) > 1:
                        found.append(sorted(component))
            elif nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
    return found


def _shared_names(modules: Mapping[str, Module], root: Path) -> list[str]:
    where: dict[str, list[str]] = defaultdict(list)
    for module, info in modules.items():
        if not _matches(module, UNNAMED_CLASSES):
            for name in info.classes:
                where[name].append(str(info.path.relative_to(root)))
    shared = ((n, sorted(p)) for n, p in where.items() if len(p) > 1)
    return [f"class {n} is defined in {', '.join(p)}" for n, p in shared]


def test_the_packages_keep_the_import_contract() -> None:
    assert violations(REPO) == []


def test_the_contract_covers_every_package_and_names_real_modules() -> None:
    packages = {init.parent.name for init in REPO.glob("*/__init__.py")} - {"tests"}
    assert packages == set(CONTRACT.may_import)  # a new package gets its row in the table
    modules = walk(REPO)
    named = [
        *(m for m in CONTRACT.machinery if "." in m or m in CONTRACT.may_import),
        *CONTRACT.records,
        *(m for m in CONTRACT.edges),
        *CONTRACT.kept_from,
        *(f"{p}.{layer}" for p, layers in CONTRACT.layers.items() for layer in layers),
    ]
    assert [m for m in named if m not in modules] == []
    layered = {m.split(".")[1] for m in modules if m.split(".")[0] in CONTRACT.layers and "." in m}
    layers = {layer for layers in CONTRACT.layers.values() for layer in layers}
    assert layered - layers <= {"__main__"}  # every subpackage is a layer of the table


def test_every_package_declares_what_others_may_import_and_names_only_what_it_holds() -> None:
    modules = walk(REPO)
    undeclared, stale = [], []
    for name, info in modules.items():
        if info.path.name != "__init__.py":
            continue
        if info.exports is None:
            undeclared.append(name)
            continue
        defined = _defined(info.path)
        stale += [
            f"{name}.{e}" for e in info.exports if f"{name}.{e}" not in modules and e not in defined
        ]
    assert undeclared == []  # each __init__ names its public surface in __all__ ([] for none)
    assert stale == []


def _defined(init: Path) -> set[str]:
    tree = ast.parse(init.read_text(encoding="utf-8"))
    targets = [t for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def test_importing_a_module_a_package_keeps_out_of_its_all_breaks_the_contract(
    tmp_path: Path,
) -> None:
    files = {
        "collectors/__init__.py": '__all__ = ["summary"]\n',
        "collectors/summary.py": "WINDOW = 1\n",
        "collectors/deltas.py": "DELTA = 1\n",
        "guards/rule.py": (
            "from collectors.summary import WINDOW\nfrom collectors.deltas import DELTA\n"
        ),
    }
    assert violations(_plant(tmp_path, files)) == [
        "guards/rule.py:2: collectors.deltas is not in collectors.__all__"
    ]


def shared_basenames(modules: Mapping[str, Module]) -> dict[str, list[str]]:
    """Each module basename two product modules share, with the modules that share it but do
    not say so: the first paragraph of a module's docstring names every other module of its
    name (the same concept at another layer: a format, its producer, its view)."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for module, info in modules.items():
        if info.path.stem not in ("__init__", "__main__") and not _matches(module, UNNAMED_CLASSES):
            by_name[info.path.stem].append(module)
    silent = {}
    for name, group in by_name.items():
        quiet = [
            m for m in group if any(o not in _first_paragraph(modules[m]) for o in group if o != m)
        ]
        if len(group) > 1 and quiet:
            silent[name] = sorted(quiet)
    return silent


def _first_paragraph(info: Module) -> str:
    docstring = ast.get_docstring(ast.parse(info.path.read_text(encoding="utf-8"))) or ""
    return " ".join(docstring.strip().split("\n\n", maxsplit=1)[0].split())


def test_two_modules_share_a_name_only_as_one_concept_at_two_layers_that_says_so() -> None:
    assert shared_basenames(walk(REPO)) == {}  # rename one, or name the other


def test_a_basename_shared_by_modules_that_do_not_name_each_other_is_found(
    tmp_path: Path,
) -> None:
    files = {
        "guards/window.py": '"""The window a guard judges."""\n',
        "evidence/window.py": '"""The evidence\'s window, as guards.window."""\n',
    }
    assert shared_basenames(walk(_plant(tmp_path, files))) == {"window": ["guards.window"]}
    files["guards/window.py"] = '"""The window a guard judges: ``evidence.window``."""\n'
    assert shared_basenames(walk(_plant(tmp_path, files))) == {}


def test_no_product_folder_holds_more_than_25_modules_flat() -> None:
    crowded = {}
    for package in CONTRACT.may_import:
        for folder in [REPO / package, *(p for p in (REPO / package).rglob("*") if p.is_dir())]:
            count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
            if count > 25:
                crowded[str(folder.relative_to(REPO))] = count
    assert crowded == {}


def _plant(root: Path, files: Mapping[str, str]) -> Path:
    for package in CONTRACT.may_import:
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
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
    lazy = "def rebuild():\n    from evidence.views.html.report import render\n"
    files = {
        "evidence/audit/__init__.py": "",
        "evidence/audit/reverify.py": lazy,
        "evidence/views/__init__.py": "",
        "evidence/views/html/__init__.py": "",
        "evidence/views/html/report.py": "import matplotlib\n",
    }
    assert violations(_plant(tmp_path, files)) == []
    (tmp_path / "evidence/audit/reverify.py").write_text(
        "from evidence.views.html.report import render\n"
    )
    assert violations(tmp_path) == [
        "evidence/audit/reverify.py: evidence.audit.reverify loads matplotlib through"
        " evidence.audit.reverify -> evidence.views.html.report -> matplotlib"
    ]


def test_evidence_may_not_import_the_ledger(tmp_path: Path) -> None:
    files = {"evidence/reviews/recording.py": "from ledger.db import session_scope\n"}
    assert violations(_plant(tmp_path, files)) == [
        "evidence/reviews/recording.py:1: evidence may not import ledger.db"
    ]


def test_a_records_module_importing_machinery_breaks_the_contract(tmp_path: Path) -> None:
    files = {"workload/records.py": "from workload.journal import JournalWriter\n"}
    assert violations(_plant(tmp_path, files)) == [
        "workload/records.py:1: a records module may not import workload.journal"
    ]


def test_a_layer_importing_one_above_it_breaks_the_contract(tmp_path: Path) -> None:
    files = {
        "evidence/comparison/ruling.py": "from evidence.views.card.tables import RATIO_LABELS\n",
        "evidence/views/card/tables.py": "RATIO_LABELS = {}\n",
    }
    assert violations(_plant(tmp_path, files)) == [
        "evidence/comparison/ruling.py:1: evidence.comparison may not import"
        " evidence.views.card.tables, a layer above it"
    ]


def test_a_type_only_import_cycle_breaks_the_contract(tmp_path: Path) -> None:
    files = {
        "matrix/model.py": "from matrix.variants import check_variants\n",
        "matrix/variants.py": "if TYPE_CHECKING:\n    from matrix.model import Cell\n",
    }
    assert violations(_plant(tmp_path, files)) == [
        "matrix/model.py: import cycle matrix.model -> matrix.variants -> matrix.model"
    ]


def test_the_campaign_walk_importing_prefect_breaks_the_contract(tmp_path: Path) -> None:
    files = {
        "flows/campaign/arm.py": "from flows.campaign.cell_run import run_cell\n",
        "flows/campaign/cell_run.py": "from prefect import task\n",
    }
    assert violations(_plant(tmp_path, files)) == [
        "flows/campaign/arm.py: flows.campaign.arm loads prefect through"
        " flows.campaign.arm -> flows.campaign.cell_run -> prefect",
        "flows/campaign/cell_run.py: flows.campaign.cell_run loads prefect through"
        " flows.campaign.cell_run -> prefect",
    ]


def test_two_product_classes_sharing_a_name_break_the_contract(tmp_path: Path) -> None:
    files = {
        "guards/dispositions.py": "class Decision:\n    pass\n",
        "evidence/reviews/decision.py": "class Decision:\n    pass\n",
        "simulator/engine.py": "class Decision:\n    pass\n",  # an engine of its own
    }
    assert violations(_plant(tmp_path, files)) == [
        "class Decision is defined in evidence/reviews/decision.py, guards/dispositions.py"
    ]


def test_judging_and_auditing_load_no_machinery() -> None:
    probe = (
        "import json, sys, guards.judge, evidence.audit.reverify; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(m for m in loaded if _matches(m, CONTRACT.machinery)) == []
