"""The files a campaign writes into its folder: one module per file, with its model and name."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "attempt",
    "bundle",
    "carried",
    "diagnostic",
    "fidelity_outcome",
    "fidelity_scores",
    "frozen_matrix",
    "gpu_posture",
    "handoff",
    "history_cache",
    "host_facts",
    "host_posture",
    "lane",
    "night",
    "passes",
    "pilot",
    "preflight",
    "protected",
    "reasons",
    "receipt",
    "seal_statement",
    "ticket",
    "ticket_index",
]
