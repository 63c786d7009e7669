"""The campaign walk as plain functions (``campaign``), its Prefect flows (``prefect``) and
the ``faceoff`` command line (``cli``)."""
