"""The bundle folder: where its files are, their sums, and the records of what it carries."""
