"""The campaign walk as plain functions: no Prefect, no command line."""

__all__: list[str] = []  # what other packages may import: nothing
