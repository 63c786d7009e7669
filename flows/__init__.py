"""The campaign walk as plain functions (``campaign``), its Prefect flows (``prefect``) and
the ``faceoff`` command line (``cli``)."""

__all__: list[str] = []  # what other packages may import: nothing
