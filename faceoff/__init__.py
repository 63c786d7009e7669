"""faceoff: qualification campaigns for LLM serving recipes.

This package holds what every other package shares: the version, the artifact
base model, canonical JSON, atomic and append-only file writes, and the error type.
"""

__version__ = "0.1.0"
