"""Recorded human decisions on a bundle."""
