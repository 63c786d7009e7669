"""Renderers of the comparison: the result card, the HTML pages, terminal views."""
