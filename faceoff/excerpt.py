"""An excerpt of a long text (an engine's error, a boot log line) that ends on a word. Pure.

A reason quotes the engine's first error; cut at a fixed length it ended mid-word
("…your input me"), and a ticket carried that on. The excerpt ends at the last word
that fits and says that more followed.
"""

from __future__ import annotations

ERROR_CHARS = 240  # an engine's error sentence fits; an HTML error page does not


def excerpt(text: str, limit: int = ERROR_CHARS) -> str:
    """``text`` on one line, whole when it fits in ``limit`` characters, else its words
    that fit followed by ``…``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    cut = head.rfind(" ")
    return (head[:cut] if cut > limit // 2 else head).rstrip(" ,;:") + "…"
