"""lanes."""
