"""Markdown building blocks for the result card: tables, escaping, source references."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote


def escape(text: str) -> str:
    """Text safe inside a table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(escape(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def link(path: str) -> str:
    """A bundle file as a link relative to the bundle's root (where RESULT.md and report.html
    are); a glob naming many files stays plain code."""
    return f"`{path}`" if "*" in path else f"[`{path}`]({quote(path)})"


def links(paths: Sequence[str]) -> str:
    return ", ".join(link(p) for p in paths)


@dataclass
class Sources:
    """Numbered references: each figure's row points at a comparison.json key and its files."""

    entries: list[str] = field(default_factory=list)

    def ref(self, key: str, files: Sequence[str]) -> str:
        where = links(files) if files else "no file"
        self.entries.append(f"{link('comparison.json')} → `{key}` ← {where}")
        return f"[{len(self.entries)}]"

    def render(self) -> str:
        return "\n".join(f"{n}. {entry}" for n, entry in enumerate(self.entries, start=1))
