"""Traffic from files and shared prefixes: dataset and trace plans, their texts and rows, the
shared system prompts, and the sample files the examples ship."""

# What other packages may import (the import contract holds them to it).
__all__ = ["rows"]
