"""The faceoff command line: argument parsing, one module per command, and views."""

__all__: list[str] = []  # what other packages may import: nothing
