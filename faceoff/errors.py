"""One error type whose message says what was wrong, where, and what to do.
The same concept at another layer: ``matrix.toml.errors``.
"""

from __future__ import annotations


class FaceoffError(Exception):
    """An error an operator can act on.

    ``where`` names the file, field, arm or cell; ``fix`` says what to do next.
    Library code raises it; only the CLI prints it.
    """

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(self.fix[:1].upper() + self.fix[1:])
        return " ".join(p.rstrip(".") + "." for p in parts)
