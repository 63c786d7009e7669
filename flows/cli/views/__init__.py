"""What the command line shows: tables, the live view, the end summary."""
