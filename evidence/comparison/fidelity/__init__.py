"""Fidelity measured on the lanes: comparison.json's entries of each fidelity cell."""
