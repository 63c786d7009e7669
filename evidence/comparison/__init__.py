"""comparison.json: its model, read from the folder and built by pure functions."""
