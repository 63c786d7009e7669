"""What the command line shows: tables, the live view, the end summary."""

__all__: list[str] = []  # what other packages may import: nothing
