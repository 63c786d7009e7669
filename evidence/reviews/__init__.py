"""Recorded human decisions on a bundle: recording one (``reviews.jsonl``, its records and
their chain: ``faceoff.formats.bundle.reviews``)."""

# What other packages may import (the import contract holds them to it).
__all__ = ["recording"]
