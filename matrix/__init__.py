"""The campaign spec: arms, cells, thresholds, the decision rule and the metric-family
registry as pydantic models; the TOML read with grid expansion, frozen, and planned."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "aa",
    "arm",
    "arrival",
    "campaign_plan",
    "cell",
    "cell_content",
    "coherence",
    "contracts",
    "engines",
    "families",
    "fidelity",
    "fields",
    "measure_key",
    "model",
    "night_window",
    "quality",
    "rule",
    "rule_warnings",
    "search",
    "slo",
    "sources",
    "thresholds",
    "toml",
    "traffic",
]
