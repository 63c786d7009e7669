"""faceoff: qualification campaigns for LLM serving recipes.

This package holds what every other package shares: the version, the artifact
base model, canonical JSON, atomic and append-only file writes, and the error type.
"""

__version__ = "0.1.0"

# What other packages may import (the import contract holds them to it).
__all__ = [
    "__version__",
    "artifact",
    "bounded",
    "canonical",
    "credentials",
    "cycles",
    "digests",
    "errors",
    "exits",
    "files",
    "forked",
    "format",
    "formats",
    "keys",
    "ports",
    "recent",
    "record_signature",
    "result",
    "seal_envelope",
    "signing",
    "trust",
]
