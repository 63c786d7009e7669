"""What one cell attempt's journal says: its summary and the parts of it."""
