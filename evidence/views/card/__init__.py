"""RESULT.md, the result card, and the Markdown it is written in."""
