"""docs/reference/modules.md, generated: every module of the distribution's packages with the
first paragraph of its docstring, package by package; and the listing of ``faceoff/formats/``
in docs/architecture.md's campaign-folder map: each file's module and its models.

Read from the source, never imported, so nothing a campaign loads (an engine client, a
database driver, a GPU library) is needed to write it. A test fails when the page and the
code differ:

    python -m faceoff.module_reference
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from faceoff.files import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_PATH = ROOT / "docs" / "reference" / "modules.md"
ARCHITECTURE_PATH = ROOT / "docs" / "architecture.md"
FORMATS = "faceoff.formats"
FORMATS_BEGIN = "<!-- generated: formats (python -m faceoff.module_reference) -->\n"
FORMATS_END = "<!-- end of the generated formats -->\n"
# In the order of docs/architecture.md's import contract: each package after those it uses.
PACKAGES = (
    "faceoff", "matrix", "workload", "collectors", "lanes", "tickets", "ledger", "simulator",
    "guards", "evidence", "flows",
)  # fmt: skip
PAGES = {"faceoff": "architecture.md"}  # a package's page, where it is not <package>.md
NO_DOCSTRING = "(no docstring)"

HEAD = """# Modules

Every module of faceoff's packages with the first paragraph of its docstring, package by
package; each name links to its source, each package to its page, where its parts are put
together. Generated from the source (`python -m faceoff.module_reference`); a test fails
when this page and the code differ. How the packages depend on one another, and the words
they share: [architecture.md](../architecture.md).
"""


@dataclass(frozen=True)
class ModuleDoc:
    name: str  # dotted, a package by its own name
    path: Path  # relative to the checkout
    summary: str  # the docstring's first paragraph on one line; NO_DOCSTRING without one


def module_docs(package: str) -> list[ModuleDoc]:
    """The package's modules, its own docstring first, then in dotted order."""
    files = sorted((ROOT / package).rglob("*.py"), key=lambda f: _dotted(f).split("."))
    return [_read(f) for f in files]


def _read(file: Path) -> ModuleDoc:
    docstring = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8")))
    return ModuleDoc(_dotted(file), file.relative_to(ROOT), summary(docstring))


def _dotted(file: Path) -> str:
    parts = file.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def summary(docstring: str | None) -> str:
    """The first paragraph, whitespace folded, safe in a table cell."""
    if not docstring or not docstring.strip():
        return NO_DOCSTRING
    first = re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0]
    return " ".join(first.split()).replace("|", "\\|")


def module_reference() -> str:
    return "\n".join([HEAD, *(_section(p) for p in PACKAGES)])


def _section(package: str) -> str:
    docs = module_docs(package)
    page = PAGES.get(package, f"{package}.md")
    lines = [f"## `{package}` — [{page}](../{page})", "", docs[0].summary, ""]
    lines += ["| module | what |", "|---|---|"]
    lines += [f"| [`{d.name}`](../../{d.path.as_posix()}) | {d.summary} |" for d in docs[1:]]
    return "\n".join(lines) + "\n"


def formats_listing() -> str:
    """The table of ``faceoff/formats/``: each module, the file its docstring opens with, and
    each model it holds with the format version it writes."""
    docs = [d for d in module_docs("faceoff") if d.name.startswith(f"{FORMATS}.")]
    lines = ["| module | the file | models (version written) |", "|---|---|---|"]
    for doc in docs:
        models = ", ".join(f"`{name}` ({version})" for name, version in _models(ROOT / doc.path))
        link = f"[`{doc.name.removeprefix('faceoff.')}`](../{doc.path.as_posix()})"
        lines.append(f"| {link} | {doc.summary} | {models} |")
    return "\n".join(lines) + "\n"


def _models(file: Path) -> list[tuple[str, str]]:
    """Each class of the module with a ``schema_version`` field, and that field's default."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            version = next(filter(None, map(_schema_default, node.body)), None)
            if version is not None:
                found.append((node.name, version))
    return found


def _schema_default(stmt: ast.stmt) -> str | None:
    if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
        return None
    if stmt.target.id != "schema_version" or not isinstance(stmt.value, ast.Call):
        return None
    default = next((k.value for k in stmt.value.keywords if k.arg == "default"), None)
    return ast.unparse(default) if default is not None else None


def with_formats_listing(page: str) -> str:
    """``page`` (docs/architecture.md) with its generated formats listing made current."""
    head, begin, rest = page.partition(FORMATS_BEGIN)
    _, end, tail = rest.partition(FORMATS_END)
    if not (begin and end):
        raise ValueError(f"{ARCHITECTURE_PATH.name} lacks the formats listing's markers")
    return head + begin + formats_listing() + end + tail


if __name__ == "__main__":
    write_text_atomic(REFERENCE_PATH, module_reference(), replace=True)
    page = ARCHITECTURE_PATH.read_text(encoding="utf-8")
    write_text_atomic(ARCHITECTURE_PATH, with_formats_listing(page), replace=True)
