"""The files the evidence writes at the bundle's top, ``MANIFEST.json``, ``comparison.json``
and ``reviews.jsonl``, and the parts ``comparison.json`` is made of, one module each."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "comparison",
    "fidelity_entries",
    "lane_facts",
    "manifest",
    "prefix_reuse",
    "probe_figures",
    "quality_results",
    "reviews",
    "sequential_looks",
]
