"""The files a campaign writes into its folder: one module per file, with its model and name."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "carried",
    "cell_record",
    "collector_samples",
    "fidelity_outcome",
    "fidelity_scores",
    "frozen_matrix",
    "gpu_posture",
    "history_cache",
    "host_facts",
    "host_posture",
    "lane",
    "night",
    "passes",
    "preflight",
    "protected",
    "reasons",
    "seal_statement",
    "stalls",
    "ticket_index",
    "verdict",
]
